import {
  type CanActivate,
  type ExecutionContext,
  ForbiddenException,
  Inject,
  Injectable,
} from '@nestjs/common';
import { REDLIMIT_BOARD_OPTIONS } from './redlimit-board.constants';
import type { RedlimitBoardOptions } from './redlimit-board.options';

/**
 * The board's guard when `authorize` is a function: the request goes on only when it resolves
 * true (a throw or anything else is a 403).
 */
@Injectable()
export class BoardAuthorizeGuard implements CanActivate {
  constructor(@Inject(REDLIMIT_BOARD_OPTIONS) private readonly options: RedlimitBoardOptions) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request: unknown = context.switchToHttp().getRequest();
    const authorize = this.options.authorize as (request: unknown) => boolean | Promise<boolean>;
    let allowed: unknown;
    try {
      allowed = await authorize(request);
    } catch {
      allowed = false;
    }
    if (allowed !== true) throw new ForbiddenException('Not allowed to use the redlimit board');
    return true;
  }
}
