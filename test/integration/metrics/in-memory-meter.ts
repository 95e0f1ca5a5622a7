/**
 * A minimal in-memory OpenTelemetry meter for the metrics specs: it keeps every instrument it
 * created and every point recorded on it. (@opentelemetry/sdk-metrics cannot be a devDependency
 * here: its 2.x line wants @opentelemetry/api < 1.10, its 3.x line Node ≥ 22.15.)
 */
import type {
  OpenTelemetryAttributes,
  OpenTelemetryInstrumentOptions,
  OpenTelemetryMeter,
} from '../../../lib';

export interface RecordedInstrument {
  readonly kind: 'counter' | 'histogram';
  readonly options: OpenTelemetryInstrumentOptions | undefined;
  readonly points: { value: number; attributes: OpenTelemetryAttributes }[];
}

export class InMemoryMeter implements OpenTelemetryMeter {
  readonly instruments = new Map<string, RecordedInstrument>();

  createCounter(
    name: string,
    options?: OpenTelemetryInstrumentOptions,
  ): { add(value: number, attributes?: OpenTelemetryAttributes): void } {
    const instrument = this.instrument(name, 'counter', options);
    return { add: (value, attributes = {}) => instrument.points.push({ value, attributes }) };
  }

  createHistogram(
    name: string,
    options?: OpenTelemetryInstrumentOptions,
  ): { record(value: number, attributes?: OpenTelemetryAttributes): void } {
    const instrument = this.instrument(name, 'histogram', options);
    return { record: (value, attributes = {}) => instrument.points.push({ value, attributes }) };
  }

  /** Points of an instrument whose attributes include `where`. */
  points(name: string, where: OpenTelemetryAttributes = {}): RecordedInstrument['points'] {
    return (this.instruments.get(name)?.points ?? []).filter((p) =>
      Object.entries(where).every(([k, v]) => p.attributes[k] === v),
    );
  }

  private instrument(
    name: string,
    kind: RecordedInstrument['kind'],
    options: OpenTelemetryInstrumentOptions | undefined,
  ): RecordedInstrument {
    if (this.instruments.has(name)) throw new Error(`instrument ${name} created twice`);
    const instrument: RecordedInstrument = { kind, options, points: [] };
    this.instruments.set(name, instrument);
    return instrument;
  }
}
