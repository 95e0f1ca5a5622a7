/**
 * prom-client and @opentelemetry/api are optional peers: `redlimit` and `redlimit/nest` load,
 * and type-check, without them; asking for metrics without the package fails with an error
 * that names it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

const PEERS = ['prom-client', '@opentelemetry/api'];
const LIB = path.resolve(__dirname, '../../../lib');

/** Makes the optional peers unresolvable, as in an app that does not install them. */
function withoutPeers(): void {
  for (const name of PEERS) {
    jest.doMock(name, () => {
      throw Object.assign(new Error(`Cannot find module '${name}' from 'redlimit'`), {
        code: 'MODULE_NOT_FOUND',
      });
    });
  }
}

describe('optional metrics peers', () => {
  afterEach(() => {
    for (const name of PEERS) jest.dontMock(name);
    jest.resetModules();
  });

  it('redlimit and redlimit/nest load without prom-client and @opentelemetry/api', () => {
    jest.isolateModules(() => {
      withoutPeers();
      const core = jest.requireActual<typeof import('../../../lib')>('../../../lib');
      expect(typeof core.prometheusMetrics).toBe('function');
      const nest = jest.requireActual<typeof import('../../../lib/nest')>('../../../lib/nest');
      expect(typeof nest.RedlimitEvents).toBe('function');
    });
  });

  it('prometheusMetrics without prom-client throws an error naming it', () => {
    jest.isolateModules(() => {
      withoutPeers();
      const core = jest.requireActual<typeof import('../../../lib')>('../../../lib');
      const call = () => core.prometheusMetrics(new core.DecisionEvents());
      expect(call).toThrow(core.MissingPeerDependencyError);
      expect(call).toThrow(/Prometheus metrics need the 'prom-client' package.*npm install/);
    });
  });

  it('openTelemetryMetrics needs @opentelemetry/api only when no meter is given', () => {
    jest.isolateModules(() => {
      withoutPeers();
      const core = jest.requireActual<typeof import('../../../lib')>('../../../lib');
      const events = new core.DecisionEvents();
      expect(() => core.openTelemetryMetrics(events)).toThrow(/'@opentelemetry\/api'/);
      const meter = {
        createCounter: () => ({ add: () => undefined }),
        createHistogram: () => ({ record: () => undefined }),
      };
      expect(() => core.openTelemetryMetrics(events, { meter })).not.toThrow();
    });
  });

  it('the Nest module fails to boot, naming the package, when metrics ask for a missing one', () => {
    jest.isolateModules(() => {
      withoutPeers();
      const nest = jest.requireActual<typeof import('../../../lib/nest')>('../../../lib/nest');
      expect(() => new nest.RedlimitEvents({ metrics: 'prometheus' })).toThrow(
        nest.MissingPeerDependencyError,
      );
      expect(() => new nest.RedlimitEvents({ metrics: { opentelemetry: true } })).toThrow(
        /'@opentelemetry\/api'/,
      );
      expect(() => new nest.RedlimitEvents({ metrics: false })).not.toThrow();
    });
  });

  it('a loading error other than a missing package is not disguised', () => {
    jest.isolateModules(() => {
      jest.doMock('prom-client', () => {
        throw new Error('broken install');
      });
      const core = jest.requireActual<typeof import('../../../lib')>('../../../lib');
      expect(() => core.prometheusMetrics(new core.DecisionEvents())).toThrow('broken install');
    });
  });

  it('no emitted declaration refers to prom-client or @opentelemetry/api', () => {
    const files = fs
      .readdirSync(LIB, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
    expect(files).toContain(path.join('metrics', 'prometheus.metrics.ts'));
    const offenders = files.filter((file) => {
      const fileName = path.join(LIB, file);
      const { outputText } = ts.transpileDeclaration(fs.readFileSync(fileName, 'utf8'), {
        fileName,
        compilerOptions: { removeComments: true },
      });
      return PEERS.some((peer) => outputText.includes(peer));
    });
    expect(offenders).toEqual([]);
  });
});
