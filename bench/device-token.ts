// What a trusted-device token costs the Node side of an @Attempt call, in CPU µs per call: finding
// the token among the request's cookies, checking its MAC and naming its device key (what
// RedlimitDevices.recognise does), against the HMAC of the login part that every @Attempt call
// pays anyway (attemptKey with a key secret). Rounds alternate the two in a shuffled order; each
// round times a batch of calls; the report is the median per-call cost over rounds with a 95 %
// bootstrap interval, and their ratio. The store's side (the epoch read beside the spend, one more
// command in the same round trip) is measured by the HTTP bench's @Attempt routes.
//
//   npx ts-node --transpile-only bench/device-token.ts [--rounds 30] [--calls 20000]
import { performance } from 'node:perf_hooks';
import {
  deviceCookieName,
  deviceKey,
  type DeviceTokenBinding,
  newDeviceNonce,
  readDeviceToken,
  signDeviceToken,
} from '../lib/http/device-token.util';
import { attemptKey } from '../lib/http/key-hash.util';
import {
  bootstrapMedian,
  median,
  seededRandom,
  shuffled,
  withInterval,
} from './support/stats.util';

const SECRET = 'bench device secret of 32 chars.';
const args = new Map(
  process.argv.slice(2).flatMap((arg, i, all) => (arg.startsWith('--') ? [[arg, all[i + 1]]] : [])),
);
const ROUNDS = Number(args.get('--rounds') ?? 30);
const CALLS = Number(args.get('--calls') ?? 20_000);

const loginKey = attemptKey('email', 'ada@example.com', SECRET).slice('email:'.length);
const binding: DeviceTokenBinding = { secret: SECRET, prefix: 'rl:', policy: 'sign-in', loginKey };
const token = signDeviceToken({
  ...binding,
  nonce: newDeviceNonce(),
  epoch: 0,
  expiresAt: Math.floor(Date.now() / 1000) + 86_400,
});
// A browser's Cookie header: the app's own cookies and the device cookie among them.
const cookieHeader = `session=abc123; theme=dark; ${deviceCookieName('redlimit_device', binding)}=${token}; lang=en`;

let sink = 0;
const work = {
  /** The login part's key: paid by every @Attempt call, token or not. */
  loginKey: () => {
    sink += attemptKey('email', 'ada@example.com', SECRET).length;
  },
  /** What a token adds: its cookie's name, the MAC check, the device key. */
  token: () => {
    const name = deviceCookieName('redlimit_device', binding);
    const value = cookieHeader
      .split(';')
      .map((pair) => pair.trim())
      .find((pair) => pair.startsWith(`${name}=`))
      ?.slice(name.length + 1);
    const fields = readDeviceToken(value, binding);
    sink += fields ? deviceKey(binding, fields.nonce).length : 0;
  },
};
type Kind = keyof typeof work;

function perCallUs(kind: Kind): number {
  const fn = work[kind];
  const start = performance.now();
  for (let i = 0; i < CALLS; i++) fn();
  return ((performance.now() - start) * 1000) / CALLS;
}

const random = seededRandom(27);
for (const kind of Object.keys(work) as Kind[]) perCallUs(kind); // warm up
const samples: Record<Kind, number[]> = { loginKey: [], token: [] };
const ratios: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const measured: Partial<Record<Kind, number>> = {};
  for (const kind of shuffled(Object.keys(work) as Kind[], random)) {
    measured[kind] = perCallUs(kind);
    samples[kind].push(measured[kind]);
  }
  ratios.push(measured.token! / measured.loginKey!);
}
console.log(`${ROUNDS} rounds of ${CALLS} calls (median per call, 95 % interval)`);
console.log(
  `  login part key (every @Attempt): ${withInterval(bootstrapMedian(samples.loginKey, random), 2, ' µs')}`,
);
console.log(
  `  device token (a call that carries one): ${withInterval(bootstrapMedian(samples.token, random), 2, ' µs')}`,
);
console.log(
  `  ratio: ${withInterval(bootstrapMedian(ratios, random), 2, '×')}  (sink ${sink > 0 ? 'ok' : '?'}, median ${median(ratios).toFixed(2)})`,
);
