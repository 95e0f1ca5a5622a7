import { Body, Controller, type ExecutionContext, Post } from '@nestjs/common';
import { Attempt } from '../lib/nest';

interface CompletionRequest {
  prompt?: unknown;
  max_tokens?: unknown;
}

/** What a request may use at most when it does not say (`max_tokens` absent). */
const DEFAULT_MAX_TOKENS = 256;

/** The request's `max_tokens`: what it reserves from its API key's token budget. */
function maxTokens(context: ExecutionContext): number {
  const body = context.switchToHttp().getRequest<{ body?: CompletionRequest }>().body;
  return Number(body?.max_tokens ?? DEFAULT_MAX_TOKENS);
}

@Controller('completions')
export class CompletionsController {
  /**
   * A token budget per API key ('tokens' in redlimit.env: 10,000 per hour). The request reserves
   * its `max_tokens` before the handler runs (refused with 429 when the budget cannot hold it; 400
   * when max_tokens is not a whole number within the budget), and settles to the tokens the
   * completion actually used once they are known.
   */
  @Post()
  complete(
    @Body() body: CompletionRequest,
    @Attempt(['apiKey'], { policy: 'tokens', cost: maxTokens }) attempt: Attempt,
  ) {
    const prompt = typeof body?.prompt === 'string' ? body.prompt : '';
    const limit = attempt.decision.receipt.cost;
    // A stand-in for a model: the prompt's words, echoed back, two tokens each, up to max_tokens.
    const words = prompt.split(/\s+/).filter(Boolean);
    const used = Math.min(limit, 2 * words.length + 1);
    attempt.adjust(used); // settled when the handler returns: the unused reservation goes back
    return {
      text: words.join(' '),
      usage: { reserved: limit, total_tokens: used },
    };
  }
}
