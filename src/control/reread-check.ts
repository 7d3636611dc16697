/** A marker as read: its stream offset and its bytes. */
export interface ReadMarker {
  offset: number;
  content: Buffer;
}

/** Whether the stream is still the one read before, and which markers to apply now. */
export type RereadVerdict = { decided: false } | { decided: true; renewed: boolean; apply: ReadMarker[] };

/**
 * Decides, on a read of P.control from its start after the reader's consumer was cancelled (the
 * stream deleted, or its node gone), whether the stream is the one read before or a new one that an
 * operator's delete and any client's declare made. A new stream starts again at offset 0, so resuming
 * at the old offset would skip every new marker; the same stream must not be applied twice (a pause
 * since resumed would hold callbacks again until its resume was read once more).
 *
 * `last` is the last marker applied before. Markers before its offset are held back until one of
 * these decides:
 * - the marker at `last.offset`: the same bytes mean the same stream (the held ones were applied
 *   before), other bytes a new stream;
 * - a marker past `last.offset` without it: the same stream, truncated by its retention;
 * - the reader's own sync marker (`isOwnSync`, appended after the read began) before `last.offset`:
 *   a new stream, shorter than the old one;
 * - expire() (the sync marker was lost): a new stream, the safe side (nothing is skipped).
 * Pure: the reader feeds it messages in stream order.
 */
export class RereadCheck {
  private readonly held: ReadMarker[] = [];

  constructor(private readonly last: ReadMarker) {}

  next(read: ReadMarker, isOwnSync: boolean): RereadVerdict {
    const { offset } = this.last;
    if (read.offset === offset)
      return read.content.equals(this.last.content) ? { decided: true, renewed: false, apply: [] } : this.renewed(read);
    if (read.offset > offset) return { decided: true, renewed: false, apply: [read] };
    if (isOwnSync) return this.renewed(read);
    this.held.push(read);
    return { decided: false };
  }

  /** No decision in time: apply everything held, as for a new stream. */
  expire(): RereadVerdict {
    return { decided: true, renewed: true, apply: this.held.splice(0) };
  }

  private renewed(read: ReadMarker): RereadVerdict {
    return { decided: true, renewed: true, apply: [...this.held.splice(0), read] };
  }
}
