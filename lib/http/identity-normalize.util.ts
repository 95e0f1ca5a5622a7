/** Code points that render as nothing: zero-width space and joiners, soft hyphen, BOM, … */
const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * An identity value (email, user name, account id) as people mean it, so that Unicode-equivalent
 * spellings share one budget: default-ignorable code points removed (zero-width space and
 * joiners, soft hyphen, variation selectors, byte-order mark, …), Unicode NFKC (full-width
 * `ＡＤＡ` → `ADA`, composed and decomposed `é` alike), lower-cased, and trimmed. Idempotent:
 * normalising twice gives the same text.
 *
 * @example
 * normalizeIdentity('ＡＤＡ@example.com'); // 'ada@example.com'
 * normalizeIdentity('ada\u200b@example.com '); // 'ada@example.com'
 * normalizeIdentity('Jose\u0301'); // 'josé' (one code point)
 */
export function normalizeIdentity(value: string): string {
  // NFKC can produce an ignorable (half-width Hangul filler → Hangul filler) and lower-casing can
  // produce text NFKC would change again, hence the second round.
  const once = value.replace(DEFAULT_IGNORABLE, '').normalize('NFKC').toLowerCase();
  return once.normalize('NFKC').replace(DEFAULT_IGNORABLE, '').trim();
}
