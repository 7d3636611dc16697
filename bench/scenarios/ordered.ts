import type { CallbackPublisher } from '../../src/producer/publisher.js';
import { httpRun, type ConsumerRun } from '../consumer-runs.js';
import type { Scenario, Table } from '../context.js';
import { publishAll, type Job, type PublishReport } from '../publish.js';
import { benchBody, startReceiver, type BenchReceiver, type ReceivedRequest } from '../receiver.js';
import { withScope } from '../scope.js';
import { fmt, median } from '../stats.js';

/** Receiver origins, as in throughput: ten instant targets. */
const TARGETS = 10;
/** Callbacks per key. */
const PER_KEY = 10;
/** The goals of ordered delivery per key: ordered ÷ unordered, and unordered beside ordered ÷ alone. */
const ORDERED_GOAL = 0.5;
const BESIDE_GOAL = 0.95;

/** Callback `i` without a key: `/u/<i>` on target i mod 10. */
const unorderedJob =
  (receiver: BenchReceiver) =>
  (i: number): Job => ({ callback: { url: `${receiver.origins[i % TARGETS]}/u/${i}`, body: benchBody(i) } });

/**
 * Publishes `keys` keys × PER_KEY callbacks: `concurrency` lanes each take the next key and publish its
 * callbacks one after another, each once the previous one is confirmed (the order the broker accepted
 * them is the order promised), so the shards hold the keys' callbacks interleaved, about `concurrency`
 * keys apart. Callback n of key k: orderKey `k<k>`, `/o/<k>/<n>` on target k mod 10 (a key's callbacks
 * go to one target, the keys spread evenly), body `i` = base + k × PER_KEY + n.
 */
async function publishKeys(
  publisher: CallbackPublisher,
  receiver: BenchReceiver,
  keys: number,
  base: number,
  concurrency = 200,
): Promise<PublishReport> {
  const started = performance.now();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < keys) {
      const key = next++;
      for (let n = 0; n < PER_KEY; n += 1) {
        const url = `${receiver.origins[key % TARGETS]}/o/${key}/${n}`;
        await publisher.publish({ url, body: benchBody(base + key * PER_KEY + n), orderKey: `k${key}` });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, keys) }, lane));
  const seconds = (performance.now() - started) / 1000;
  return { count: keys * PER_KEY, seconds, rate: (keys * PER_KEY) / seconds };
}

/** `unordered` callbacks without a key and `keys` keys × PER_KEY with one, published at the same time (100 publishes in flight each). */
async function publishMixed(
  publisher: CallbackPublisher,
  receiver: BenchReceiver,
  unordered: number,
  keys: number,
): Promise<PublishReport> {
  const started = performance.now();
  await Promise.all([
    publishAll(publisher, unordered, unorderedJob(receiver), 100),
    publishKeys(publisher, receiver, keys, unordered, 100),
  ]);
  const seconds = (performance.now() - started) / 1000;
  const count = unordered + keys * PER_KEY;
  return { count, seconds, rate: count / seconds };
}

const isOrdered = (request: ReceivedRequest): boolean => request.path.startsWith('/o/');

/** Each callback's first 200, in arrival order, of the requests that pass `filter`. */
function deliveries(requests: ReceivedRequest[], filter: (request: ReceivedRequest) => boolean): ReceivedRequest[] {
  const seen = new Set<number>();
  const out: ReceivedRequest[] = [];
  for (const request of requests) {
    if (!request.ok || seen.has(request.i) || !filter(request)) continue;
    seen.add(request.i);
    out.push(request);
  }
  return out;
}

interface Drain {
  delivered: number;
  seconds: number;
  /** Deliveries a second, first → last delivery (as httpRun counts). */
  rate: number;
}

/** The drain of a list of deliveries, or of its first `upTo`. */
function drainOf(list: ReceivedRequest[], upTo = list.length): Drain {
  const taken = list.slice(0, upTo);
  const seconds = taken.length === 0 ? Number.NaN : (taken[taken.length - 1]!.at - taken[0]!.at) / 1000;
  return { delivered: taken.length, seconds, rate: taken.length / seconds };
}

interface OrderCheck {
  /** Requests of a key for a callback lower than one of its key that arrived before. */
  inversions: number;
  /** Keys not every one of whose callbacks was answered 200. */
  incomplete: number;
  keys: number;
}

/** From the paths `/o/<key>/<n>` the receiver saw, in arrival order: did each key see its callbacks in order? */
function orderCheck(requests: ReceivedRequest[], keys: number): OrderCheck {
  const highest = new Map<string, number>();
  const delivered = new Map<string, Set<number>>();
  let inversions = 0;
  for (const request of requests) {
    if (!isOrdered(request)) continue;
    const [, , key, nText] = request.path.split('/');
    if (key === undefined || nText === undefined) continue;
    const n = Number(nText);
    if (n < (highest.get(key) ?? -1)) inversions += 1;
    highest.set(key, Math.max(n, highest.get(key) ?? -1));
    if (request.ok) {
      const set = delivered.get(key) ?? new Set<number>();
      set.add(n);
      delivered.set(key, set);
    }
  }
  let complete = 0;
  for (const set of delivered.values()) if (set.size === PER_KEY) complete += 1;
  return { inversions, incomplete: keys - complete, keys };
}

/** One round: (a) unordered alone, (b) ordered alone, (c) both at once, with what each needs from the receiver's record. */
interface Round {
  unordered?: { run: ConsumerRun; half: Drain };
  ordered?: { run: ConsumerRun; order: OrderCheck };
  mixed?: { run: ConsumerRun; unordered: Drain; ordered: Drain; order: OrderCheck };
}

const drainOfRun = (run: ConsumerRun): Drain => ({ delivered: run.delivered, seconds: run.seconds, rate: run.rate });

const verdict = (ratio: number, goal: number): string => (!Number.isFinite(ratio) ? 'n/a' : ratio >= goal ? 'meets' : 'misses');

/** Worker (or broker) CPU over the run, as a share of one core. */
const cpuShare = (run: ConsumerRun, usPerCallback: number | undefined): number =>
  usPerCallback === undefined ? Number.NaN : (usPerCallback * run.delivered) / 1e6 / run.seconds;

/**
 * Ordered delivery per key against unordered delivery, in one run, one worker, default settings, ten
 * instant targets: (a) N callbacks without a key, pre-filled, drained; (b) the same N as N/10 keys × 10
 * (orderKey set), pre-filled in each key's publish order, drained, the receiver's paths checked for
 * order; (c) N/2 without a key and N/2 with one, published together, drained: the unordered half's
 * rate against (a)'s over its first N/2 deliveries (the same count). `--repeat` rotates the three.
 */
export const ordered: Scenario = {
  name: 'ordered',
  async run(ctx) {
    const keys = ctx.quick ? 1_000 : 10_000;
    const count = keys * PER_KEY;
    const half = count / 2;
    return withScope(ctx.url, async (scope) => {
      const receiver = scope.add(await startReceiver(TARGETS));
      const rounds = Math.max(1, ctx.options.repeat ?? 1);
      const label = (name: string, round: number): string => (rounds > 1 ? `${name} (round ${round + 1})` : name);
      const logRun = (run: ConsumerRun): ConsumerRun => {
        ctx.log(`ordered: ${run.name}: ${fmt(run.rate)}/s (${run.delivered}/${run.expected})`);
        return run;
      };
      const plans = {
        unordered: async (round: Round, r: number): Promise<void> => {
          const run = logRun(
            await httpRun(ctx, receiver, {
              name: label(`(a) ${count} unordered`, r),
              count,
              kind: 'relay',
              fill: (publisher) => publishAll(publisher, count, unorderedJob(receiver)),
            }),
          );
          round.unordered = {
            run,
            half: drainOf(
              deliveries(receiver.requests, () => true),
              half,
            ),
          };
        },
        ordered: async (round: Round, r: number): Promise<void> => {
          const run = logRun(
            await httpRun(ctx, receiver, {
              name: label(`(b) ${keys} keys × ${PER_KEY} ordered`, r),
              count,
              kind: 'relay',
              fill: (publisher) => publishKeys(publisher, receiver, keys, 0),
            }),
          );
          round.ordered = { run, order: orderCheck(receiver.requests, keys) };
          ctx.log(`ordered: inversions ${round.ordered.order.inversions}, keys incomplete ${round.ordered.order.incomplete}`);
        },
        mixed: async (round: Round, r: number): Promise<void> => {
          const run = logRun(
            await httpRun(ctx, receiver, {
              name: label(`(c) ${half} unordered + ${keys / 2} keys × ${PER_KEY} ordered`, r),
              count,
              kind: 'relay',
              fill: (publisher) => publishMixed(publisher, receiver, half, keys / 2),
            }),
          );
          round.mixed = {
            run,
            unordered: drainOf(deliveries(receiver.requests, (request) => !isOrdered(request))),
            ordered: drainOf(deliveries(receiver.requests, isOrdered)),
            order: orderCheck(receiver.requests, keys / 2),
          };
          ctx.log(`ordered: (c) unordered ${fmt(round.mixed.unordered.rate)}/s, ordered ${fmt(round.mixed.ordered.rate)}/s`);
        },
      };
      const kinds = ['unordered', 'ordered', 'mixed'] as const;
      const done: Round[] = [];
      for (let r = 0; r < rounds; r += 1) {
        const round: Round = {};
        for (let i = 0; i < kinds.length; i += 1) await plans[kinds[(i + r) % kinds.length]!](round, r);
        done.push(round);
      }

      const orderedRatio = (round: Round): number => round.ordered!.run.rate / round.unordered!.run.rate;
      const besideRatio = (round: Round): number => round.mixed!.unordered.rate / round.unordered!.half.rate;
      const row = (name: string, drain: Drain, ofA: Drain, extra: string[]): string[] => [
        name,
        String(drain.delivered),
        fmt(drain.seconds, 1),
        fmt(drain.rate),
        fmt(drain.rate / ofA.rate, 2),
        ...extra,
      ];
      const runCells = (run: ConsumerRun, inversions = ''): string[] => [
        fmt(run.cpuUsPerCallback),
        fmt(cpuShare(run, run.cpuUsPerCallback) * 100),
        fmt(run.brokerCpuUsPerCallback),
        fmt(cpuShare(run, run.brokerCpuUsPerCallback) * 100),
        run.overflowed === undefined ? '' : String(run.overflowed),
        inversions,
      ];
      const blank = ['', '', '', '', '', ''];
      const rows = done.flatMap((round, r) => {
        const a = round.unordered!;
        const b = round.ordered!;
        const c = round.mixed!;
        const aDrain = drainOfRun(a.run);
        const tag = rounds > 1 ? ` (round ${r + 1})` : '';
        return [
          row(`(a) unordered${tag}`, aDrain, aDrain, runCells(a.run)),
          row(`(a) unordered, its first ${half}${tag}`, a.half, a.half, blank),
          row(
            `(b) ${keys} keys × ${PER_KEY} ordered${tag}`,
            drainOfRun(b.run),
            aDrain,
            runCells(b.run, `${b.order.inversions} (${b.order.incomplete} keys incomplete)`),
          ),
          row(
            `(c) unordered + ordered, all${tag}`,
            drainOfRun(c.run),
            aDrain,
            runCells(c.run, `${c.order.inversions} (${c.order.incomplete} keys incomplete)`),
          ),
          row(`(c) its ${half} unordered (÷ (a)'s first ${half})${tag}`, c.unordered, a.half, blank),
          row(`(c) its ${half} ordered${tag}`, c.ordered, aDrain, blank),
        ];
      });
      const ratioOrdered = done.map(orderedRatio);
      const ratioBeside = done.map(besideRatio);
      const inversions = done.reduce((sum, round) => sum + round.ordered!.order.inversions, 0);
      const incomplete = done.reduce((sum, round) => sum + round.ordered!.order.incomplete, 0);
      const range = (list: number[]): string => (rounds > 1 ? ` (${fmt(Math.min(...list), 2)}–${fmt(Math.max(...list), 2)})` : '');
      const medianOrdered = median(ratioOrdered);
      const medianBeside = median(ratioBeside);
      const tables: Table[] = [
        {
          title: `Ordered delivery: ${count} callbacks (${keys} keys × ${PER_KEY}), one worker, defaults, ${TARGETS} instant targets, pre-filled queues`,
          headers: [
            'run',
            'delivered',
            's',
            'deliveries/s',
            '× (a)',
            'worker CPU µs/callback',
            'worker CPU %',
            'broker CPU µs/callback',
            'broker CPU %',
            'moved to P.slow',
            'order inversions',
          ],
          rows,
        },
        {
          title: `Goals${rounds > 1 ? `: same-run medians over ${rounds} rounds (order rotated each round; each ratio within its round)` : ''}`,
          headers: ['goal', 'measured', 'needed', 'verdict'],
          rows: [
            [
              `ordered ÷ unordered: (b) ${keys} keys × ${PER_KEY} ÷ (a) ${count} unordered`,
              `${fmt(medianOrdered, 2)}×${range(ratioOrdered)}`,
              `≥ ${fmt(ORDERED_GOAL, 2)}×`,
              verdict(medianOrdered, ORDERED_GOAL),
            ],
            [
              `unordered beside ordered: (c)'s ${half} unordered ÷ (a)'s first ${half}`,
              `${fmt(medianBeside, 2)}×${range(ratioBeside)}`,
              `≥ ${fmt(BESIDE_GOAL, 2)}×`,
              verdict(medianBeside, BESIDE_GOAL),
            ],
            [
              `order kept in (b): requests of a key before an earlier callback of it${rounds > 1 ? ', all rounds' : ''}`,
              `${inversions} inversions, ${incomplete} keys incomplete`,
              '0',
              inversions === 0 && incomplete === 0 ? 'meets' : 'misses',
            ],
          ],
        },
      ];
      const first = done[0]!;
      const notes = [
        `Pre-filled: each run's queues are filled first through the library's publisher (200 publishes in flight; (b) ${fmt(first.ordered!.run.publishRate)}/s, each key's callbacks one after another, each once the previous one is confirmed, 200 keys at a time; (a) ${fmt(first.unordered!.run.publishRate)}/s), then the worker starts; a rate counts first → last delivery at the receiver.`,
        `Ordered callbacks: orderKey k<key>, path /o/<key>/<n>, a key's callbacks to target key mod ${TARGETS}; they travel in the ORDERED_SHARDS shards (default 4), each consumed by this worker. The order check reads the receiver's paths in arrival order: an inversion is a request of a key for n after one for a higher n.`,
        `(c): the unordered half's rate counts its own first → last delivery, the ordered half finishing when it does; (a)'s rate at the same count is over its first ${half} deliveries, warm-up included as in (c).`,
        'CPU %: the process\u2019s CPU time over the run\u2019s first → last delivery, in one core; a worker well under 100% on a slow run waited rather than worked.',
      ];
      return {
        tables,
        data: { keys, perKey: PER_KEY, count, targets: TARGETS, rounds: done, ratios: { ordered: ratioOrdered, beside: ratioBeside } },
        notes,
        charts: [
          {
            title: 'ordered: deliveries per second',
            unit: '/s',
            bars: done.flatMap((round, r) => {
              const tag = rounds > 1 ? ` ${r + 1}` : '';
              return [
                { label: `(a) unordered${tag}`, value: round.unordered!.run.rate },
                { label: `(b) ordered${tag}`, value: round.ordered!.run.rate },
                { label: `(c) unordered${tag}`, value: round.mixed!.unordered.rate },
                { label: `(c) ordered${tag}`, value: round.mixed!.ordered.rate },
              ];
            }),
          },
          {
            title: 'ordered: ratios',
            unit: '×',
            bars: [
              { label: 'ordered ÷ unordered', value: medianOrdered },
              { label: 'unordered beside ordered ÷ alone', value: medianBeside },
            ],
          },
        ],
      };
    });
  },
};
