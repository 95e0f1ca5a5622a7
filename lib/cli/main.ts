#!/usr/bin/env node
/**
 * The `redlimit` command (package.json `bin`): peek at and reset rate limits of a redlimit app.
 * See `redlimit --help` and {@link runCli}.
 * @packageDocumentation
 */
import { runCli } from './redlimit.cli';

void runCli(process.argv.slice(2), process).then((code) => {
  // Exit once the output is flushed: nothing left behind (a socket a hung server never closed)
  // may keep an operator's command waiting.
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
});
