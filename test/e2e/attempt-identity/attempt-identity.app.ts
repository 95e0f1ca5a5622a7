/**
 * Fixture: sign-in routes whose @Attempt parts name where the account comes from (path, query,
 * header, body, nested body), a bare part on routes where the account could come from two
 * places, and a store that counts what reaches it.
 */
import {
  Body,
  Controller,
  type ExecutionContext,
  HttpCode,
  Module,
  Param,
  Post,
  Query,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { Attempt, contextField, RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';
import { CountingStore } from '../support/counting-store';

export { CountingStore };

/** The accounts whose passwords each handler checked, in order. */
export class Checked {
  readonly accounts: string[] = [];
}

/** The body's email, read by a function part (as an app computing its key would). */
function bodyEmail(context: ExecutionContext): string | undefined {
  const body = context.switchToHttp().getRequest<{ body?: { email?: unknown } }>().body;
  return typeof body?.email === 'string' ? body.email : undefined;
}

export function attemptIdentityApp(store: CountingStore, checked: Checked): Type {
  @Controller()
  class SignInController {
    /** The handler checks the account in the path: the part says so. */
    @Post('by-param/:email')
    @HttpCode(200)
    byParam(
      @Param('email') email: string,
      @Attempt('params.email', { policy: 'login' }) _attempt: Attempt,
    ): { account: string } {
      checked.accounts.push(email);
      return { account: email };
    }

    /** A bare part on a route whose handler reads the path: a body email must not win. */
    @Post('bare/:email')
    @HttpCode(200)
    bare(
      @Param('email') email: string,
      @Attempt('email', { policy: 'login' }) _attempt: Attempt,
    ): { account: string } {
      checked.accounts.push(email);
      return { account: email };
    }

    /** A bare part on a route whose handler reads the query string. */
    @Post('bare-query')
    @HttpCode(200)
    bareQuery(
      @Query('email') email: string,
      @Attempt('email', { policy: 'login' }) _attempt: Attempt,
    ): { account: string } {
      checked.accounts.push(String(email));
      return { account: String(email) };
    }

    @Post('query')
    @HttpCode(200)
    query(
      @Query('email') email: unknown,
      @Attempt('query.email', { policy: 'login' }) _attempt: Attempt,
    ): { account: string } {
      checked.accounts.push(String(email));
      return { account: String(email) };
    }

    @Post('header')
    @HttpCode(200)
    header(@Attempt('headers.X-Account', { policy: 'login' }) _attempt: Attempt): { ok: true } {
      checked.accounts.push('header');
      return { ok: true };
    }

    @Post('nested')
    @HttpCode(200)
    nested(
      @Body() body: { user?: { email?: unknown } },
      @Attempt('body.user.email', { policy: 'login' }) _attempt: Attempt,
    ): { account: string } {
      checked.accounts.push(String(body.user?.email));
      return { account: String(body.user?.email) };
    }

    /** The handler turns whatever it gets back into text, as careless handlers do. */
    @Post('body')
    @HttpCode(200)
    body(
      @Body() body: { email?: unknown },
      @Attempt('body.email', { policy: 'login' }) _attempt: Attempt,
    ): { account: string } {
      checked.accounts.push(String(body.email));
      return { account: String(body.email) };
    }

    /** A function part, normalised by default as a field part is. */
    @Post('computed')
    @HttpCode(200)
    computed(@Attempt(bodyEmail, { policy: 'login' }) _attempt: Attempt): { ok: true } {
      checked.accounts.push('computed');
      return { ok: true };
    }

    /** A function part given as { value }, without normalize: normalised too. */
    @Post('computed-spec')
    @HttpCode(200)
    computedSpec(
      @Attempt({ value: bodyEmail, name: 'email' }, { policy: 'login' }) _attempt: Attempt,
    ): { ok: true } {
      checked.accounts.push('computed-spec');
      return { ok: true };
    }

    /** A key function built on contextField: spellings of one account are one account. */
    @Post('key-function')
    @HttpCode(200)
    @UseGuards(RedlimitGuard)
    @Throttle('login', (context) => `account:${contextField(context, 'body.email') ?? '-'}`)
    keyFunction(): { ok: true } {
      checked.accounts.push('key-function');
      return { ok: true };
    }

    /** contextField's raw value, for a case-sensitive token. */
    @Post('key-function-raw')
    @HttpCode(200)
    @UseGuards(RedlimitGuard)
    @Throttle(
      'login',
      (context) => `token:${contextField(context, 'body.token', { raw: true }) ?? '-'}`,
    )
    keyFunctionRaw(): { ok: true } {
      checked.accounts.push('key-function-raw');
      return { ok: true };
    }

    /** Normalisation off: tokens are case-sensitive. */
    @Post('exact')
    @HttpCode(200)
    exact(
      @Attempt({ field: 'body.token', normalize: false }, { policy: 'login' }) _attempt: Attempt,
    ): { ok: true } {
      checked.accounts.push('exact');
      return { ok: true };
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        store,
        policies: { login: { algorithm: 'fixed-window', limit: 3, window: '1h' } },
      }),
    ],
    controllers: [SignInController],
  })
  class AttemptIdentityAppModule {}
  return AttemptIdentityAppModule;
}
