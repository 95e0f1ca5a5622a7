/** CRC16/XMODEM, as Redis Cluster uses it to map keys to its 16384 slots. */
const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/**
 * The Redis Cluster slot of a key: CRC16 of its hash tag (the part between the first `{` and the
 * next `}`, when that part is not empty) or of the whole key, modulo 16384.
 *
 * @example
 * clusterSlot('rl:{ip:203.0.113.7}:login:0') === clusterSlot('ip:203.0.113.7'); // true
 */
export function clusterSlot(key: string): number {
  let hashed = key;
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) hashed = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(hashed, 'utf8'))
    crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc % 16384;
}

let tags: string[] | undefined;

/**
 * A short text whose Cluster slot is `slot` (0–16383): put between `{` and `}`, it places a key of
 * the library's own in that slot, beside the keys of the callers there. The table of all 16384 is
 * found once, on first use (base-36 counting, ~170,000 CRCs).
 *
 * @example
 * clusterSlot(`rl:{${slotTag(42)}}!x`) === 42; // true
 */
export function slotTag(slot: number): string {
  if (tags === undefined) {
    const found: string[] = new Array<string>(16384);
    let left = 16384;
    for (let i = 0; left > 0; i++) {
      const text = i.toString(36);
      let crc = 0;
      for (let c = 0; c < text.length; c++)
        crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ text.charCodeAt(c)) & 0xff]!;
      const at = crc % 16384;
      if (found[at] === undefined) {
        found[at] = text;
        left--;
      }
    }
    tags = found;
  }
  const tag = tags[slot];
  if (tag === undefined) throw new RangeError(`redlimit: no Cluster slot ${slot} (0–16383)`);
  return tag;
}
