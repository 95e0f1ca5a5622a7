/*
 * cross-slot.pml: the cross-slot spend of RedisStore on Redis Cluster, as spin sees it.
 *
 * What the code does (lib/stores/redis-stack.ts, StackRuns.spend): a call whose keys live in several
 * Cluster slots is split into slot groups (slot-groups.util.ts), spent group by group in slot
 * order, each group one atomic stack/consume script run (lua/lib/stack-frame.lua) marked
 * compensable; when a later group refuses (or fails), the groups already charged are refunded
 * by the call's spend id with a negative lifetime (a compensation: lua/lib/refund-frame.lua
 * records nothing in the ledger), and the groups after the refusing one are only peeked (they
 * write nothing). An admitted call may later be refunded by its receipt: one refund script per
 * slot group, in any order, recorded in each key's ledger so a copy of the receipt gives nothing.
 *
 * Modelled here: 3 clients (separate processes: no SlotTurns between them), 2 slots with one
 * limiter key each (slot 0 = key A, slot 1 = key B); each client makes one call, either
 * cross-slot on [A, B] or (MIXED) a single-slot consume on B, and when admitted may refund it,
 * once or twice (a copied receipt). Client 0 may die between its two groups: its compensation
 * never runs. Every script run is one d_step (Redis runs one script at a time). Time: one
 * window (counters), or ticks 0..TMAX (buckets, which refill between scripts).
 *
 * Algorithms (BUCKET=0|1):
 *   0  a counter: fixed-window (fixed-window/{model,refund}.lua) inside one window; also what
 *      sliding-window does to `cur` inside one window. (sliding-log removes its own members by
 *      spend id: exact by construction, so not modelled apart.)
 *   1  lib/bucket.lua, the one state machine of token-bucket and gcra: backlog b in units
 *      (capacity burst*window, drained at `limit` units per ms), busy period start, m, lastAt,
 *      prevM, prevLastAt, and the pending list of compensable spends (lib/pending.lua) with the
 *      segment minimums that make compensations exact.
 *
 * Ghost state: every charge, per slot and client, with its instant, units and fate (live,
 * refunded, compensated); replay() recomputes what a bucket/counter holding some of them would
 * hold now. Properties, checked after every script run (assertions) and as LTL:
 *   overOk    never over-admits: what the live charges weigh never exceeds the capacity
 *             (counter: charges <= limit in the window);
 *   lowerOk   no budget is created, and a compensation or refund never gives back another
 *             client's spend: the stored state weighs at least what the live charges weigh;
 *   upperOk   a refused call leaves no charge once its compensation ran: the stored state weighs
 *             no more than every charge not compensated (refunds counted as if they gave
 *             nothing back); and while no receipt refund has run on the slot, exactly what the
 *             live charges weigh (compensations are exact whatever is spent in between);
 *   settles   every client finishes (compensation included), unless it dies.
 *
 * Run: test/model/check.sh (spin -a, gcc, pan for each property, LIMIT 1 and 2, both models).
 */

#ifndef LIMIT
#define LIMIT 1
#endif
#ifndef BUCKET
#define BUCKET 0
#endif
#ifndef MIXED
#define MIXED 1
#endif

#define NC 3 /* clients */
#define NS 2 /* slots */
#define NP NC /* pending entries per key: one per client at most (the code caps at 16) */

#if BUCKET
/* window = 2 * limit ms: one token is `window` units and refills in 2 ms (partial refills). */
#define WIN (2 * LIMIT)
#define DRAIN LIMIT
#ifndef TMAX
#define TMAX 3
#endif
#else
#undef TMAX
#define WIN 1
#define DRAIN 0
#define TMAX 0
#endif
#define CAP (LIMIT * WIN) /* burst = limit */

/* COST2=1: client 2 spends 2 at limit 2 (a call that fits only an empty key); else all spend 1. */
#ifndef COST2
#define COST2 0
#endif
#define COST(id) ((COST2 && LIMIT == 2 && id == 2) -> 2 : 1)
#define UNITS(c) ((c) * WIN)

#define MIN(a, b) (((a) < (b)) -> (a) : (b))
#define MAX(a, b) (((a) > (b)) -> (a) : (b))
/* lib/bucket.lua lowest(): the lower of two segment minimums, -1 meaning none. */
#define LOWEST(a, b) (((a) < 0) -> (b) : ((((b) < 0) || ((a) < (b))) -> (a) : (b)))

#define NONE 0
#define LIVE 1
#define REFUNDED 2
#define COMPENSATED 3

byte now; /* the Redis clock (ms) */

/* Stored state per slot. Counter: sb = count. Bucket: backlog sb at `now` (see clock). */
int sb[NS];
int sbusy[NS];
int sm[NS];
int slast[NS];
int sprevM[NS];
int sprevLast[NS];
byte sn[NS];
byte pnd[NS * NP]; /* pending entry: spend id (client + 1), instant, segment minimum */
byte pat[NS * NP];
int pseg[NS * NP];
bool ledger[NS * NC]; /* refund ledger: spend ids refunded (recorded refunds only) */

/* Ghost: every charge and its fate. */
byte gst[NS * NC];
byte gat[NS * NC];
byte gun[NS * NC];
bool receiptRefunded[NS];
byte done;

bool overOk = true;
bool lowerOk = true;
bool upperOk = true;

/* Scratch of one script run, zeroed at its end (scrub) so it never tells two states apart. */
int wb, wbusy, wm, wlast, wprevM, wprevLast, wn;
byte wid[NP];
byte wat[NP];
int wseg[NP];
int nb, nbusy, nm, nlast, nprevM, nprevLast, back, entry, given, k, t, real, lo, hi;
byte fits, latest;

/* lib/bucket.lua load(): the state at `now`, or EMPTY once the bucket is full again. */
inline load(s) {
  wb = sb[s];
  if
  :: wb <= 0 ->
    wb = 0; wbusy = -1; wm = -1; wlast = -1; wprevM = -1; wprevLast = -1; wn = 0
  :: else ->
    wb = MIN(wb, CAP); wbusy = sbusy[s]; wm = sm[s]; wlast = slast[s];
    wprevM = sprevM[s]; wprevLast = sprevLast[s]; wn = sn[s];
    k = 0;
    do
    :: k < wn -> wid[k] = pnd[s * NP + k]; wat[k] = pat[s * NP + k]; wseg[k] = pseg[s * NP + k]; k++
    :: else -> break
    od
  fi
}

/* lib/bucket.lua store(): DEL when full, else the state as of `now`. */
inline store(s) {
  if
  :: wb <= 0 -> wn = 0; sb[s] = 0; sbusy[s] = 0; sm[s] = 0; slast[s] = 0;
    sprevM[s] = 0; sprevLast[s] = 0
  :: else -> sb[s] = wb; sbusy[s] = wbusy; sm[s] = wm; slast[s] = wlast;
    sprevM[s] = wprevM; sprevLast[s] = wprevLast
  fi;
  sn[s] = wn;
  k = 0;
  do
  :: k < NP ->
    if
    :: k < wn -> pnd[s * NP + k] = wid[k]; pat[s * NP + k] = wat[k]; pseg[s * NP + k] = wseg[k]
    :: else -> pnd[s * NP + k] = 0; pat[s * NP + k] = 0; pseg[s * NP + k] = 0
    fi;
    k++
  :: else -> break
  od
}

/* lib/bucket.lua removePending(): entry e goes, its segment merged into the previous one. */
inline removePending(e) {
  if
  :: e > 0 -> wseg[e - 1] = LOWEST(wseg[e - 1], wseg[e])
  :: else -> skip
  fi;
  k = e;
  do
  :: k + 1 < wn -> wid[k] = wid[k + 1]; wat[k] = wat[k + 1]; wseg[k] = wseg[k + 1]; k++
  :: else -> break
  od;
  wn--
}

/* lib/bucket.lua lowerAfter(): lowers the segments a spend at `at` precedes by `back`. */
inline lowerAfter(at) {
  k = 0;
  do
  :: k < wn ->
    if
    :: (k + 1 >= wn || wat[MIN(k + 1, NP - 1)] >= at) && wseg[k] >= 0 -> wseg[k] = MAX(0, wseg[k] - back)
    :: else -> skip
    fi;
    k++
  :: else -> break
  od
}

/* lib/bucket.lua evaluate() + commit(); `comp`: one slot group of a cross-slot spend. */
inline bucketConsume(s, c, id, comp) {
  load(s);
  fits = (wb + UNITS(c) <= CAP);
  if
  :: fits ->
    nb = wb + UNITS(c); nlast = now; nprevM = wm; nprevLast = wlast;
    if
    :: wb == 0 -> nbusy = now; nm = -1; nprevM = -1; nprevLast = -1
    :: else -> nbusy = MIN(wbusy, now); nm = (((wm < 0) || (wb < wm)) -> wb : wm)
    fi;
    if
    :: wn > 0 -> wseg[wn - 1] = LOWEST(wseg[wn - 1], wb) /* this spend's point */
    :: else -> skip
    fi;
    if
    :: comp -> wid[wn] = id + 1; wat[wn] = now; wseg[wn] = -1; wn++
    :: else -> skip
    fi;
    wb = nb; wbusy = nbusy; wm = nm; wlast = nlast; wprevM = nprevM; wprevLast = nprevLast;
    store(s)
  :: else -> skip /* a refusal writes nothing */
  fi
}

/* lib/bucket.lua refund(); `comp`: a compensation (negative lifetime in ARGV[6]). */
inline bucketRefund(s, c, id, at, comp) {
  load(s);
  given = 0;
  if
  :: wb == 0 || at < wbusy -> skip /* full since the spend */
  :: else ->
    back = MIN(UNITS(c), wb);
    latest = (at == wlast);
    entry = -1;
    if
#ifdef MUTANT_REFUND_RULE
    :: false -> /* the compensation before pending entries: the plain refund rule */
#else
    :: comp ->
#endif
      k = 0;
      do
      :: k < wn -> if :: wid[k] == id + 1 -> entry = k :: else -> skip fi; k++
      :: else -> break
      od
    :: else -> skip
    fi;
    if
    :: entry >= 0 ->
      k = entry;
      do
      :: k < wn -> back = LOWEST(back, wseg[k]); k++
      :: else -> break
      od
    :: entry < 0 && !latest && wm >= 0 -> back = MIN(back, wm)
    :: else -> skip
    fi;
    if
    :: back <= 0 -> skip
    :: else ->
      if
      :: entry >= 0 ->
        k = entry;
        do
        :: k < wn -> if :: wseg[k] >= 0 -> wseg[k] = wseg[k] - back :: else -> skip fi; k++
        :: else -> break
        od;
        removePending(entry)
      :: else -> lowerAfter(at)
      fi;
      wb = wb - back;
      if
      :: latest -> wm = wprevM; wlast = wprevLast
      :: else ->
        wm = ((wm >= 0) -> MAX(0, wm - back) : -1);
        wprevM = ((wprevM >= 0) -> MAX(0, wprevM - back) : -1)
      fi;
      store(s);
      given = 1
    fi
  fi
}

/* fixed-window/model.lua commit and fixed-window/refund.lua, inside one window. */
inline counterConsume(s, c) {
  fits = (sb[s] + c <= LIMIT);
  if
  :: fits -> sb[s] = sb[s] + c
  :: else -> skip
  fi
}

inline counterRefund(s, c) {
  if
  :: sb[s] == 0 -> given = 0
  :: sb[s] > 0 && sb[s] <= c -> sb[s] = 0; given = 1 /* DEL */
  :: sb[s] > c -> sb[s] = sb[s] - c; given = 1 /* DECRBY */
  fi
}

/* What a key holding the charges of fate `fate` (or also `also`) would weigh now. */
inline replay(s, fate, also, out) {
  out = 0; t = 0;
  do
  :: t <= now ->
    if
    :: t > 0 -> out = MAX(0, out - DRAIN)
    :: else -> skip
    fi;
    k = 0;
    do
    :: k < NC ->
      if
      :: (gst[s * NC + k] == fate || gst[s * NC + k] == also) && gat[s * NC + k] == t ->
        out = out + gun[s * NC + k]
      :: else -> skip
      fi;
      k++
    :: else -> break
    od;
    t++
  :: else -> break
  od
}

inline scrub() {
  wb = 0; wbusy = 0; wm = 0; wlast = 0; wprevM = 0; wprevLast = 0; wn = 0;
  nb = 0; nbusy = 0; nm = 0; nlast = 0; nprevM = 0; nprevLast = 0; back = 0; entry = 0; given = 0;
  real = 0; lo = 0; hi = 0; fits = 0; latest = 0; t = 0;
  k = 0;
  do
  :: k < NP -> wid[k] = 0; wat[k] = 0; wseg[k] = 0; k++
  :: else -> break
  od;
  k = 0
}

inline check(s) {
  real = sb[s];
  replay(s, LIVE, LIVE, lo);
  replay(s, LIVE, REFUNDED, hi);
  overOk = overOk && lo <= CAP;
  lowerOk = lowerOk && real >= lo;
  upperOk = upperOk && real <= hi && (receiptRefunded[s] || real == lo);
  printf("  slot %d: stored %d, live charges %d, uncompensated %d\n", s, real, lo, hi);
  assert(overOk);
  assert(lowerOk);
  assert(upperOk);
  scrub()
}

/* One slot group (or a single-slot consume): stack/consume.lua on the slot's key. */
inline consume(s, c, id, comp, ok, at) {
#if BUCKET
  bucketConsume(s, c, id, comp);
#else
  counterConsume(s, c);
#endif
  ok = fits;
  at = now;
  printf("t=%d client %d consume slot %d cost %d comp %d: fits %d; stored b=%d busy=%d m=%d last=%d prevM=%d prevLast=%d pending=%d\n",
    now, id, s, c, comp, fits, sb[s], sbusy[s], sm[s], slast[s], sprevM[s], sprevLast[s], sn[s]);
  if
  :: fits -> gst[s * NC + id] = LIVE; gat[s * NC + id] = now; gun[s * NC + id] = UNITS(c)
  :: else -> skip
  fi;
  check(s)
}

/* A refund script (lua/<algorithm>/refund.lua through lib/refund-frame.lua). */
inline refund(s, c, id, at, record) {
  if
  :: ledger[s * NC + id] -> given = 0 /* refunded already: settled() (compensations look too) */
  :: else ->
#if BUCKET
    bucketRefund(s, c, id, at, !record);
#else
    counterRefund(s, c);
#endif
    if
    :: given > 0 && record -> ledger[s * NC + id] = true /* remember() */
    :: else -> skip
    fi
  fi;
  printf("t=%d client %d refund(record=%d) slot %d at %d: given %d; stored b=%d busy=%d m=%d last=%d prevM=%d prevLast=%d pending=%d\n",
    now, id, (record -> 1 : 0), s, at, given, sb[s], sbusy[s], sm[s], slast[s], sprevM[s], sprevLast[s], sn[s]);
  if
  :: record && gst[s * NC + id] == LIVE -> gst[s * NC + id] = REFUNDED; receiptRefunded[s] = true
  :: !record -> gst[s * NC + id] = COMPENSATED
  :: else -> skip
  fi;
  check(s)
}

/*
 * Limiter.refund(receipt): RedisStore.refund runs one refund script per slot group, sent together
 * (either may run first). To keep the search small each client has one order: client 1 slot 1
 * first, the others slot 0 first (the other clients' steps still interleave between the two).
 */
inline refundReceipt(c, id, at0, at1) {
  if
  :: id != 1 -> d_step { refund(0, c, id, at0, true) }; d_step { refund(1, c, id, at1, true) }
  :: id == 1 -> d_step { refund(1, c, id, at1, true) }; d_step { refund(0, c, id, at0, true) }
  fi
}

proctype client(byte id) {
  byte at0, at1;
  bool ok;
  if
  :: true -> /* consume([A, B]): StackRuns.spend, slot groups in slot order */
    d_step { consume(0, COST(id), id, true, ok, at0) };
    if
    :: !ok -> goto finished /* refused by group 0; group 1 is peeked: nothing written */
    :: else -> skip
    fi;
    if
    :: id == 0 -> goto died /* the process dies between groups: no compensation ever */
    :: true -> skip
    fi;
    d_step { consume(1, COST(id), id, true, ok, at1) };
    if
    :: !ok -> d_step { refund(0, COST(id), id, at0, false) }; goto finished /* StackRuns.compensate */
    :: else -> skip
    fi;
    /* admitted: maybe refunded by its receipt, maybe twice (client 1: a copy of the receipt) */
    if
    :: refundReceipt(COST(id), id, at0, at1)
    :: id == 1 -> refundReceipt(COST(id), id, at0, at1); refundReceipt(COST(id), id, at0, at1)
    :: skip
    fi
  :: MIXED && id == 2 -> /* consume(B): one slot, one script */
    d_step { consume(1, COST(id), id, false, ok, at1) };
    if
    :: ok -> if :: d_step { refund(1, COST(id), id, at1, true) } :: skip fi
    :: else -> skip
    fi
  fi;
finished:
  done++;
  goto end;
died:
  done++;
end:
  skip
}

/*
 * The clock. Each tick also drains every stored bucket by `limit` units and deletes it once full
 * (its PXAT expiry): the state at `now` is what load() would decode, so no write time is kept.
 */
active proctype clock() {
  do
  :: now < TMAX ->
    d_step {
      now++;
      t = 0;
      do
      :: t < NS ->
        if
        :: sb[t] > DRAIN -> sb[t] = sb[t] - DRAIN
        :: sb[t] > 0 && sb[t] <= DRAIN -> wb = 0; store(t) /* full again: expired */
        :: else -> skip
        fi;
        t++
      :: else -> break
      od;
      scrub()
    }
  :: else -> break
  od
}

init {
  atomic {
    run client(0);
    run client(1);
    run client(2)
  }
}

ltl neverOverAdmits { [] overOk }
ltl noBudgetCreated { [] lowerOk }
ltl refusalLeavesNoCharge { [] upperOk }
ltl settles { <> (done == NC) }
