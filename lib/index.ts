/**
 * redlimit: rate limiting for NestJS on Redis that stays correct under concurrency.
 *
 * The core (`Limiter`, stores) has no NestJS dependency and can be used on its own.
 * @packageDocumentation
 * @module redlimit
 */
export * from './core';
export * from './stores';
export * from './client';
export * from './metrics';
