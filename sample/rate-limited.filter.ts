import { type ArgumentsHost, Catch, type ExceptionFilter, HttpStatus } from '@nestjs/common';
import type { Response } from 'express';
import { RateLimitedError } from '../lib';

/** Turns a refusal into 429 with Retry-After (whole seconds, rounded up). */
@Catch(RateLimitedError)
export class RateLimitedFilter implements ExceptionFilter {
  catch(error: RateLimitedError, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    response
      .status(HttpStatus.TOO_MANY_REQUESTS)
      .set('Retry-After', String(Math.ceil(error.retryAfterMs / 1000)))
      .json({ statusCode: 429, message: 'Too many requests', retryAfterMs: error.retryAfterMs });
  }
}
