import { httpRun, rawCeiling, type ConsumerRun } from '../consumer-runs.js';
import type { Scenario, Table } from '../context.js';
import { startReceiver } from '../receiver.js';
import { withScope } from '../scope.js';
import { fmt, median } from '../stats.js';

/** The run of median rate (the lower middle one of an even count). */
const medianRun = (runs: ConsumerRun[]): ConsumerRun => [...runs].sort((a, b) => a.rate - b.rate)[Math.floor((runs.length - 1) / 2)]!;

/** Receiver origins: with the default TARGET_CONCURRENCY (PREFETCH / 10 = 10), ten targets can use all 100 slots. */
const TARGETS = 10;

/**
 * Max delivery rate of the relay against two ceilings, on a pre-filled queue (see consumer-runs.ts):
 * (a) raw AMQP consume/ack, (b) a minimal consume → POST → ack consumer; then the relay with every
 * feature on, with EVENTS=off, and with all callbacks to one target (where the bulkhead caps it).
 */
export const throughput: Scenario = {
  name: 'throughput',
  async run(ctx) {
    const count = ctx.quick ? 5_000 : 50_000;
    const oneCount = Math.round(count / 5);
    return withScope(ctx.url, async (scope) => {
      const receiver = scope.add(await startReceiver(TARGETS));
      const step = async (run: Promise<ConsumerRun>): Promise<ConsumerRun> => {
        const done = await run;
        ctx.log(`throughput: ${done.name}: ${fmt(done.rate)}/s`);
        return done;
      };
      const raw = await step(rawCeiling(ctx, receiver, count));
      // --repeat N: N rounds of the three rows the issue compares, their order rotated each round, so
      // that no row always runs first after another's pre-fill; ratios are taken within a round.
      const rounds = Math.max(1, ctx.options.repeat ?? 1);
      const paired = {
        minimal: [] as ConsumerRun[],
        relay: [] as ConsumerRun[],
        off: [] as ConsumerRun[],
        minimalOne: [] as ConsumerRun[],
        relayOne: [] as ConsumerRun[],
      };
      const label = (name: string, round: number): string => (rounds > 1 ? `${name} (round ${round + 1})` : name);
      const plans = {
        minimal: (round: number) => httpRun(ctx, receiver, { name: label('ceiling (b): minimal consumer', round), count, kind: 'minimal' }),
        relay: (round: number) => httpRun(ctx, receiver, { name: label('relay, every feature on', round), count, kind: 'relay' }),
        off: (round: number) =>
          httpRun(ctx, receiver, { name: label('relay, ISOLATION=off', round), count, kind: 'relay', env: { ISOLATION: 'off' } }),
        // One target alone, against the minimal consumer sending to that one target (same count).
        minimalOne: (round: number) =>
          httpRun(ctx, receiver, {
            name: label('ceiling (b): minimal consumer, 1 target', round),
            count: oneCount,
            kind: 'minimal',
            targets: 1,
          }),
        relayOne: (round: number) =>
          httpRun(ctx, receiver, { name: label('relay, every feature on, 1 target', round), count: oneCount, kind: 'relay', targets: 1 }),
      };
      // Without --repeat the one-target pair is left out: the single '1 target' row below stands in for it.
      const kinds = rounds > 1 ? (['minimal', 'relay', 'off', 'minimalOne', 'relayOne'] as const) : (['minimal', 'relay', 'off'] as const);
      for (let round = 0; round < rounds; round++) {
        for (let i = 0; i < kinds.length; i++) {
          const kind = kinds[(i + round) % kinds.length]!;
          paired[kind].push(await step(plans[kind](round)));
        }
      }
      const minimal = medianRun(paired.minimal);
      const relay = medianRun(paired.relay);
      const noIsolation = medianRun(paired.off);
      const listened = await step(
        httpRun(ctx, receiver, { name: 'relay, every feature on, events consumed', count, kind: 'relay', listenToEvents: true }),
      );
      const noEvents = await step(httpRun(ctx, receiver, { name: 'relay, EVENTS=off', count, kind: 'relay', env: { EVENTS: 'off' } }));
      const warmStart = await step(
        httpRun(ctx, receiver, {
          name: 'relay, TARGET_INITIAL_CONCURRENCY=10',
          count,
          kind: 'relay',
          env: { TARGET_INITIAL_CONCURRENCY: '10' },
        }),
      );
      const oneTarget =
        rounds > 1
          ? medianRun(paired.relayOne)
          : await step(httpRun(ctx, receiver, { name: 'relay, every feature on, 1 target', count: oneCount, kind: 'relay', targets: 1 }));
      const runs = [
        raw,
        ...paired.minimal,
        ...paired.relay,
        ...paired.off,
        ...paired.minimalOne,
        ...paired.relayOne,
        listened,
        noEvents,
        warmStart,
        ...(rounds > 1 ? [] : [oneTarget]),
      ];
      const profiled = ctx.options.profile
        ? await step(httpRun(ctx, receiver, { name: 'relay, every feature on, --cpu-prof', count, kind: 'relay', profile: true }))
        : undefined;
      if (profiled) runs.push(profiled);
      ctx.shared.relayRate = relay.rate;

      const tables: Table[] = [
        {
          title: `Throughput: ${count} callbacks (1 target run: ${oneTarget.expected}), ${TARGETS} targets, PREFETCH 100, persistent, quorum P.work, pre-filled queue`,
          headers: [
            'run',
            'delivered',
            's',
            'deliveries/s',
            '× minimal',
            'p50 ms*',
            'p99 ms*',
            'p99.9 ms*',
            'consumer CPU µs/callback',
            'broker CPU µs/callback',
            'consumer RSS MB',
            'deferred (circuit open)',
            'moved to P.slow',
          ],
          rows: runs.map((run) => [
            run.name,
            `${run.delivered}/${run.expected}`,
            fmt(run.seconds, 1),
            fmt(run.rate),
            fmt(run.rate / minimal.rate, 2),
            fmt(run.latency.p50),
            fmt(run.latency.p99),
            fmt(run.latency.p999),
            fmt(run.cpuUsPerCallback),
            fmt(run.brokerCpuUsPerCallback),
            fmt(run.rssMb),
            run.deferred === undefined ? '' : String(run.deferred),
            run.overflowed === undefined ? '' : String(run.overflowed),
          ]),
        },
      ];
      if (rounds > 1) {
        const ceilingOf = { relay: paired.minimal, off: paired.minimal, relayOne: paired.minimalOne } as const;
        const ratios = (kind: 'relay' | 'off' | 'relayOne'): number[] =>
          paired[kind].map((run, round) => run.rate / ceilingOf[kind][round]!.rate);
        const cpu = (list: ConsumerRun[]): string => fmt(median(list.map((r) => r.cpuUsPerCallback ?? NaN)));
        const brokerCpu = (list: ConsumerRun[]): string => fmt(median(list.map((r) => r.brokerCpuUsPerCallback ?? NaN)));
        const ceilingRow = (name: string, list: ConsumerRun[]): string[] => [
          name,
          fmt(median(list.map((r) => r.rate))),
          '1.00',
          '',
          cpu(list),
          brokerCpu(list),
        ];
        const names = {
          relay: 'relay, every feature on',
          off: 'relay, ISOLATION=off',
          relayOne: 'relay, every feature on, 1 target (÷ minimal, 1 target)',
        } as const;
        tables.push({
          title: `Same-run medians over ${rounds} rounds (order rotated each round; a ratio divides by the minimal consumer of its own round)`,
          headers: [
            'run',
            'median deliveries/s',
            'median × minimal',
            'min–max × minimal',
            'median consumer CPU µs/callback',
            'median broker CPU µs/callback',
          ],
          rows: [
            ceilingRow('ceiling (b): minimal consumer', paired.minimal),
            ...(['relay', 'off'] as const).map((kind) => [
              names[kind],
              fmt(median(paired[kind].map((r) => r.rate))),
              fmt(median(ratios(kind)), 2),
              `${fmt(Math.min(...ratios(kind)), 2)}–${fmt(Math.max(...ratios(kind)), 2)}`,
              cpu(paired[kind]),
              brokerCpu(paired[kind]),
            ]),
            ceilingRow(`ceiling (b): minimal consumer, 1 target (${oneCount} callbacks)`, paired.minimalOne),
            [
              names.relayOne,
              fmt(median(paired.relayOne.map((r) => r.rate))),
              fmt(median(ratios('relayOne')), 2),
              `${fmt(Math.min(...ratios('relayOne')), 2)}–${fmt(Math.max(...ratios('relayOne')), 2)}`,
              cpu(paired.relayOne),
              brokerCpu(paired.relayOne),
            ],
          ],
        });
      }
      const notes = [
        `Pre-filled: the queue is filled first (library publisher, 200 unconfirmed publishes at a time: ${fmt(relay.publishRate)}/s for the relay run; raw confirm-publish ${fmt(raw.publishRate)}/s), then the consumer process starts; the rate counts first → last delivery.`,
        '* publish → delivered latency of a pre-filled queue is mostly queueing time (roughly position / rate); see half-load for the latency of an unsaturated relay.',
        `Outcome events: with nobody listening (no queue bound to P.events, the default), the worker stops publishing them within one round trip (the broker returns them as unroutable) and sends one probe a second, waiting a quarter second for its return: ${fmt((1 - relay.rate / noEvents.rate) * 100, 1)}% of the rate against EVENTS=off. With a queue bound and consumed ("events consumed"), every callback costs one more routed message: ${fmt((1 - listened.rate / noEvents.rate) * 100, 1)}% of the rate, ${fmt((listened.cpuUsPerCallback ?? NaN) - (noEvents.cpuUsPerCallback ?? NaN))} µs of worker CPU and ${fmt((listened.brokerCpuUsPerCallback ?? NaN) - (noEvents.brokerCpuUsPerCallback ?? NaN))} µs of broker CPU per callback.`,
        `Isolation cost: ISOLATION=off runs at ${fmt(noIsolation.rate / relay.rate, 2)}× the default rate. The default run moved ${relay.overflowed ?? 0} callbacks to P.slow (a move is two broker operations more; a saturated worker moves a target only where its attempts take more than 3× the median target's: docs/isolation.md#3-overflow-a-busy-targets-excess-leaves-its-lane).`,
      ];
      const data: Record<string, unknown> = { count, targets: TARGETS, runs };
      if (profiled?.profile) {
        const { file, summary } = profiled.profile;
        data.profile = profiled.profile;
        const lines = (list: typeof summary.frames): string[][] => list.map((line) => [line.name, fmt(line.ms), fmt(line.percent, 1)]);
        tables.push({
          title: 'Profile of the relay worker: self time by frame (after start-up, idle excluded)',
          headers: ['frame', 'ms', '% of busy'],
          rows: lines(summary.frames),
        });
        tables.push({
          title: 'Profile of the relay worker: self time by module',
          headers: ['module', 'ms', '% of busy'],
          rows: lines(summary.modules.slice(0, 12)),
        });
        notes.push(`CPU profile: ${file} (open in Chrome DevTools → Performance, or \`npx tsx bench/profile-summary.ts FILE\`).`);
      }
      return {
        tables,
        data,
        notes,
        charts: [
          { title: 'deliveries per second', unit: '/s', bars: runs.map((run) => ({ label: run.name, value: run.rate })) },
          {
            title: 'rate as a ratio of the minimal consumer (b)',
            unit: '×',
            bars: runs.map((run) => ({ label: run.name, value: run.rate / minimal.rate })),
          },
          {
            title: 'consumer CPU per callback',
            unit: 'µs',
            bars: runs.map((run) => ({ label: run.name, value: run.cpuUsPerCallback ?? NaN })),
          },
        ],
      };
    });
  },
};
