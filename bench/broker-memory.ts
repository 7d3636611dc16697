import type { BenchContext } from './context.js';
import { rssMb } from './processes.js';

/**
 * The broker's memory in bytes, as RabbitMQ counts it for its memory alarm (`mem_used`: the Erlang
 * VM's total), read with `rabbitmqctl eval` from a throwaway local node; for another broker, the
 * management API at BENCH_MANAGEMENT_URL (e.g. http://guest:guest@127.0.0.1:15672 of a container you
 * started); else the RSS of a local beam.smp; else undefined.
 */
export async function brokerMemoryBytes(ctx: BenchContext): Promise<number | undefined> {
  const { ctl } = ctx.broker;
  if (ctl) {
    const out = await ctl(['eval', 'erlang:garbage_collect(), erlang:memory(total).']).catch(() => undefined);
    const bytes = Number(out?.trim());
    if (Number.isFinite(bytes) && bytes > 0) return bytes;
  }
  const management = process.env.BENCH_MANAGEMENT_URL;
  if (management) {
    const url = new URL('/api/nodes', management);
    const auth = Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64');
    url.username = '';
    url.password = '';
    const nodes = (await (await fetch(url, { headers: { authorization: `Basic ${auth}` } })).json()) as Array<{ mem_used?: number }>;
    const used = nodes.reduce((sum, n) => sum + (n.mem_used ?? 0), 0);
    if (used > 0) return used;
  }
  const rss = rssMb(ctx.broker.beamPid);
  return rss === undefined ? undefined : rss * 1024 * 1024;
}
