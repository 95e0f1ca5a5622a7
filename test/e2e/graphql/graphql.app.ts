/**
 * Fixture: a code-first GraphQL API (Apollo) with @Throttle on queries and @Attempt on sign-in
 * mutations. On Express, Apollo's default context (`{ req }`; the response is `req.res`); on
 * Fastify a context that adds the reply, as the README tells Fastify users to do.
 */
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module, type Type, UseGuards } from '@nestjs/common';
import { Args, Field, GraphQLModule, InputType, Mutation, Query, Resolver } from '@nestjs/graphql';
import { GraphQLError } from 'graphql';
import type { Redis } from 'ioredis';
import { Attempt, RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';
import type { Platform } from '../support/app';

export const PASSWORD = 'correct horse battery staple';

/** Counts resolver runs: a refused call must never reach the resolver. */
export class Calls {
  count = 0;
}

@InputType()
class SignInInput {
  @Field()
  email!: string;

  @Field()
  password!: string;
}

interface GraphQLContext {
  req: { headers: Record<string, string | undefined> };
}

export function graphqlApp(client: Redis, prefix: string, calls: Calls, platform: Platform): Type {
  @Resolver()
  @UseGuards(RedlimitGuard)
  class LimitedResolver {
    @Query(() => String)
    @Throttle('two')
    ping(): string {
      calls.count++;
      return 'pong';
    }

    /** Same policy as ping: a budget of its own under the default key. */
    @Query(() => String)
    @Throttle('two')
    pong(): string {
      return 'ping';
    }

    /** Keyed on a header of the HTTP request behind the operation. */
    @Query(() => String)
    @Throttle('two', (ctx) => {
      const { req } = ctx.getArgByIndex<GraphQLContext>(2);
      return `api-key:${req.headers['x-api-key'] ?? '-'}`;
    })
    byApiKey(): string {
      return 'ok';
    }
  }

  @Resolver()
  class SignInResolver {
    @Mutation(() => Boolean)
    signIn(
      @Args('email') _email: string,
      @Args('password') password: string,
      @Attempt(['ip', 'email'], { policy: 'login' }) attempt: Attempt,
    ): boolean {
      calls.count++;
      if (password !== PASSWORD) throw new GraphQLError('Wrong email or password');
      attempt.refund();
      return true;
    }

    /** Keyed on a top-level argument; every call costs. */
    @Mutation(() => Boolean)
    sendCode(
      @Args('email') _email: string,
      @Attempt('email', { policy: 'login' }) _attempt: Attempt,
    ): boolean {
      calls.count++;
      return true;
    }

    /** The part names its source: the email field of the 'input' argument. */
    @Mutation(() => Boolean)
    sendCodeByPath(
      @Args('input') _input: SignInInput,
      @Attempt('args.input.email', { policy: 'login' }) _attempt: Attempt,
    ): boolean {
      calls.count++;
      return true;
    }

    /** A bare part that could come from two arguments. */
    @Mutation(() => Boolean)
    sendCodeTwice(
      @Args('email') _email: string,
      @Args('input') _input: SignInInput,
      @Attempt('email', { policy: 'login' }) _attempt: Attempt,
    ): boolean {
      calls.count++;
      return true;
    }

    /** A source a resolver does not have: a clear error on first use. */
    @Mutation(() => Boolean)
    sendCodeFromBody(
      @Args('email') _email: string,
      @Attempt('body.email', { policy: 'login' }) _attempt: Attempt,
    ): boolean {
      calls.count++;
      return true;
    }

    /** Trusted devices: a success sets the device cookie on the HTTP response behind the call. */
    @Mutation(() => Boolean)
    signInFromDevice(
      @Args('email') _email: string,
      @Args('password') password: string,
      @Attempt('email', { policy: 'login', devices: true }) attempt: Attempt,
    ): boolean {
      calls.count++;
      if (password !== PASSWORD) throw new GraphQLError('Wrong email or password');
      attempt.refund();
      return true;
    }

    /** The email sits inside an input object. */
    @Mutation(() => Boolean)
    signInWithInput(
      @Args('input') input: SignInInput,
      @Attempt('email', { policy: 'login' }) attempt: Attempt,
    ): boolean {
      calls.count++;
      if (input.password !== PASSWORD) throw new GraphQLError('Wrong email or password');
      attempt.refund();
      return true;
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        devices: { secret: 'graphql device secret, 32 chars' },
        policies: {
          two: { algorithm: 'fixed-window', limit: 2, window: '1h' },
          login: { algorithm: 'fixed-window', limit: 2, window: '1h' },
        },
      }),
      GraphQLModule.forRoot<ApolloDriverConfig>({
        driver: ApolloDriver,
        autoSchemaFile: true,
        ...(platform === 'fastify' && {
          context: (req: unknown, reply: unknown) => ({ req, reply }),
        }),
      }),
    ],
    providers: [LimitedResolver, SignInResolver],
  })
  class GraphqlAppModule {}

  return GraphqlAppModule;
}
