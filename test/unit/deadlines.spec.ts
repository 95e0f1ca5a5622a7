import { StoreTimeoutError } from '../../lib';
import { Deadlines } from '../../lib/core/deadlines';

const after = (ms: number) =>
  new Promise<string>((resolve) => setTimeout(() => resolve('marker'), ms));
const never = () => new Promise<never>(() => undefined);

describe('Deadlines: one timer bounds every call of a limiter', () => {
  it('a call that gets no answer is refused with a timeout before a timer set for 4 × ms fires', async () => {
    const deadlines = new Deadlines(50);
    const first = await Promise.race([
      deadlines.race(never()).catch((error: unknown) => error),
      after(200),
    ]);
    expect(first).toBeInstanceOf(StoreTimeoutError);
  });

  it('calls made one after another expire one after another, behind an answered one', async () => {
    const deadlines = new Deadlines(30);
    const order: string[] = [];
    let answer!: (value: string) => void;
    const answered = deadlines.race(new Promise<string>((resolve) => (answer = resolve)));
    const a = deadlines.race(never()).catch(() => order.push('a'));
    await after(10);
    const b = deadlines.race(never()).catch(() => order.push('b'));
    answer('in time');
    expect(await answered).toBe('in time');
    await Promise.all([a, b]);
    expect(order).toEqual(['a', 'b']);
  });

  it('a value that arrives after the timeout goes to onLate; a late error changes nothing', async () => {
    const deadlines = new Deadlines(20);
    const late: string[] = [];
    let answer!: (value: string) => void;
    let fail!: (error: Error) => void;
    const value = deadlines.race(new Promise<string>((resolve) => (answer = resolve)), (v) =>
      late.push(v),
    );
    const error = deadlines.race(new Promise<string>((_, reject) => (fail = reject)));
    await expect(value).rejects.toBeInstanceOf(StoreTimeoutError);
    await expect(error).rejects.toBeInstanceOf(StoreTimeoutError);
    answer('late');
    fail(new Error('late error'));
    await after(5);
    expect(late).toEqual(['late']);
  });

  it('keeps serving after the queue drained, and after thousands of answered calls', async () => {
    const deadlines = new Deadlines(20);
    await Promise.all(Array.from({ length: 3000 }, (_, i) => deadlines.race(Promise.resolve(i))));
    await after(40); // the timer fired over answered calls only, and the queue drained
    await expect(deadlines.race(never())).rejects.toBeInstanceOf(StoreTimeoutError);
  });
});
