/** Waits until `done()` holds, polling every 20 ms; fails after `ms` (a bound, not a timing assertion). */
export async function until(done: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
