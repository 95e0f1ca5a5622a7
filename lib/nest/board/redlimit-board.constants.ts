/** The injection token of `RedlimitBoardModule`'s options. */
export const REDLIMIT_BOARD_OPTIONS = Symbol('REDLIMIT_BOARD_OPTIONS');
