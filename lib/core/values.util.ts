/** `error` as an Error: itself, or an Error whose message is its text (a thrown string, …). */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Array.isArray without widening a readonly array's element type to `any`. */
export function isList(value: unknown): value is readonly unknown[] {
  return Array.isArray(value);
}
