import { type DynamicModule, Module } from '@nestjs/common';
import { BoardAuthorizeGuard } from './board-authorize.guard';
import { boardController } from './redlimit-board.controller';
import { REDLIMIT_BOARD_OPTIONS } from './redlimit-board.constants';
import {
  checkBoardOptions,
  isGuardClass,
  type RedlimitBoardOptions,
} from './redlimit-board.options';
import { RedlimitBoard } from './redlimit-board.service';

/**
 * The ops board: pages that show, for the whole fleet, each policy's rates, the keys refused
 * most, current lockouts, what shadow policies would refuse and the audit of actions; a key's
 * budget under every policy, with buttons to unlock it and to grant it a one-off allowance (not
 * in `readOnly` mode). Served by the
 * app at `path` on Express and Fastify; off unless `authorize` lets the request in. Needs
 * `RedlimitModule` (its store keeps the board's figures: Redis for a fleet, memory for one
 * process). `redlimit board` serves the same board from the CLI.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     RedlimitModule.forRoot({ redis: process.env.REDIS_URL, policies: { login: { algorithm: 'fixed-window', limit: 10, window: '15m' } } }),
 *     RedlimitBoardModule.forRoot({
 *       path: '/ops/limits',
 *       authorize: (req) => (req as { user?: { role?: string } }).user?.role === 'ops',
 *       actor: (req) => (req as { user?: { email?: string } }).user?.email,
 *     }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({})
export class RedlimitBoardModule {
  /**
   * Serves the board at `options.path`, behind `options.authorize`.
   *
   * @throws TypeError / RangeError naming the option that is wrong, before anything is created
   */
  static forRoot(options: RedlimitBoardOptions): DynamicModule {
    const checked = checkBoardOptions(options);
    const guard = isGuardClass(checked.authorize) ? checked.authorize : BoardAuthorizeGuard;
    return {
      module: RedlimitBoardModule,
      controllers: [boardController(checked.path, guard)],
      providers: [
        { provide: REDLIMIT_BOARD_OPTIONS, useValue: checked },
        BoardAuthorizeGuard,
        RedlimitBoard,
      ],
      exports: [RedlimitBoard],
    };
  }
}
