/**
 * Fixture: lockouts and shadow mode on GraphQL resolvers (Apollo), on a real Redis. As in
 * test/e2e/graphql, Fastify's context adds the reply so refusals can set headers.
 */
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module, type Type, UseGuards } from '@nestjs/common';
import { GraphQLModule, Mutation, Query, Resolver } from '@nestjs/graphql';
import type { Redis } from 'ioredis';
import {
  Attempt,
  type DecisionEvent,
  RedlimitGuard,
  RedlimitModule,
  Throttle,
} from '../../../lib/nest';
import { ABUSE_POLICIES } from './abuse-controls.app';
import type { Platform } from '../support/app';

/** What the resolvers and the module's events saw. */
export class GraphqlSeen {
  resolved = 0;
  readonly events: DecisionEvent[] = [];
}

export function abuseControlsGraphqlApp(
  client: Redis,
  prefix: string,
  seen: GraphqlSeen,
  platform: Platform,
): Type {
  @Resolver()
  @UseGuards(RedlimitGuard)
  class AbuseResolver {
    @Query(() => String)
    @Throttle('login')
    login(): string {
      seen.resolved++;
      return 'ok';
    }

    @Query(() => String)
    @Throttle('canary')
    canary(): string {
      seen.resolved++;
      return 'ok';
    }

    /** Answers whether the attempt it was handed is a shadow refusal. */
    @Mutation(() => Boolean)
    otp(@Attempt('ip', { policy: 'otp' }) attempt: Attempt): boolean {
      seen.resolved++;
      return attempt.decision.shadowRefused === true;
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: ABUSE_POLICIES,
        onDecision: (event) => seen.events.push(event),
      }),
      GraphQLModule.forRoot<ApolloDriverConfig>({
        driver: ApolloDriver,
        autoSchemaFile: true,
        ...(platform === 'fastify' && {
          context: (req: unknown, reply: unknown) => ({ req, reply }),
        }),
      }),
    ],
    providers: [AbuseResolver],
  })
  class AbuseControlsGraphqlModule {}
  return AbuseControlsGraphqlModule;
}
