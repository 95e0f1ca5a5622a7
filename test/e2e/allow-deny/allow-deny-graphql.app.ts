/**
 * Fixture: GraphQL resolvers (Apollo) behind the module's deny list. Clients are named by
 * X-Forwarded-For from a trusted loopback proxy, read from the HTTP request behind the operation.
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
import type { Platform } from '../support/app';

/** What the resolvers and the module's events saw. */
export class GraphqlSeen {
  resolved = 0;
  readonly events: DecisionEvent[] = [];
}

export const DENIED_RANGE = '203.0.113.0/24';

export function allowDenyGraphqlApp(
  client: Redis,
  prefix: string,
  seen: GraphqlSeen,
  platform: Platform,
): Type {
  @Resolver()
  @UseGuards(RedlimitGuard)
  class ItemsResolver {
    @Query(() => String)
    @Throttle('two')
    items(): string {
      seen.resolved++;
      return 'items';
    }
  }

  @Resolver()
  class SessionResolver {
    @Mutation(() => Boolean)
    signIn(@Attempt('ip', { policy: 'login' }) _attempt: Attempt): boolean {
      seen.resolved++;
      return true;
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: {
          two: { algorithm: 'fixed-window', limit: 2, window: '1h' },
          login: { algorithm: 'fixed-window', limit: 2, window: '1h' },
        },
        clientIp: { trustedProxies: ['loopback'] },
        deny: { ips: [DENIED_RANGE] },
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
    providers: [ItemsResolver, SessionResolver],
  })
  class AllowDenyGraphqlModule {}
  return AllowDenyGraphqlModule;
}
