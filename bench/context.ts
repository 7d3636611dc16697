/** What every scenario gets from the runner. */
export interface BenchContext {
  url: string;
  quick: boolean;
  broker: {
    version: string;
    hasPlugin: boolean;
    /** `AMQP_URL`, `local-node` or `testcontainers`. */
    source: string;
    /** The Erlang VM of a local throwaway broker, for its RSS; undefined otherwise. */
    beamPid: number | undefined;
    /** `rabbitmqctl -n NODE ARGS…` on a throwaway local node (broker-tap.ts); undefined for a container or AMQP_URL. */
    ctl: ((args: string[]) => Promise<string>) | undefined;
    /** `rabbitmqctl ARGS…` on a local node or in the container, for diagnostics (a cut-off run); undefined for AMQP_URL. */
    inspect: ((args: string[]) => Promise<string>) | undefined;
  };
  /** Set by earlier scenarios for later ones: the relay's max rate from `throughput`. */
  shared: { relayRate?: number };
  /**
   * `shapes`: the `--shape` selection (names or name prefixes) of scenarios that have shapes; `long`: include their long shapes.
   * `pending`: the pending scenario's callbacks, the window they fall due in (s), the delay modes to run,
   *   and the lead (s) from the start of their publishing to the first due time.
   * `repeat`: rounds of the rows a scenario compares (throughput), for same-run medians.
   */
  options: {
    profile: boolean;
    repeat: number | undefined;
    rate: number | undefined;
    shapes: string[] | undefined;
    long: boolean;
    pending: {
      count: number | undefined;
      windowS: number | undefined;
      modes: Array<'queues' | 'plugin'> | undefined;
      background: number | undefined;
      leadS: number | undefined;
    };
  };
  /** Progress line on stderr. */
  log(line: string): void;
}

export interface Table {
  title: string;
  headers: string[];
  rows: string[][];
}

/** One panel of the SVG chart: bars in one unit; `target` draws a dashed line (e.g. a latency goal). */
export interface ChartPanel {
  title: string;
  unit: string;
  bars: Array<{ label: string; value: number }>;
  target?: number;
}

export interface ScenarioResult {
  tables: Table[];
  /** Everything measured, for the JSON file. */
  data: Record<string, unknown>;
  notes: string[];
  charts: ChartPanel[];
}

export interface Scenario {
  name: string;
  run(ctx: BenchContext): Promise<ScenarioResult>;
}

export const SKIP_PLUGIN = 'skipped: broker lacks x-delayed-message';
