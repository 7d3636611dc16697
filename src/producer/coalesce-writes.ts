/** What the coalescer needs of a connection's socket (a net or TLS socket). */
export interface CorkableStream {
  cork(): void;
  uncork(): void;
  readonly destroyed: boolean;
}

/**
 * Where amqp-connection-manager keeps amqplib's socket: `manager.connection` is amqplib's
 * ChannelModel, whose `connection.stream` is the socket. Not part of either library's typed API,
 * so it is read defensively: undefined while disconnected or if a release moves it.
 */
export function amqpSocket(manager: { connection?: unknown }): CorkableStream | undefined {
  const stream = (manager.connection as { connection?: { stream?: Partial<CorkableStream> } } | undefined)?.connection?.stream;
  return typeof stream?.cork === 'function' && typeof stream.uncork === 'function' ? (stream as CorkableStream) : undefined;
}

/**
 * Returns `hold()`: called right after a publish, it corks the connection's socket until amqplib has
 * written the messages of this event-loop turn, so that they leave in one `writev` system call
 * instead of one `write` each. amqplib's mux writes queued frames from a setImmediate scheduled in
 * the process.nextTick that the publish queued; the uncork is scheduled the same way one tick later,
 * so it runs right behind that write. Heartbeats and acks written meanwhile wait no longer. Corking
 * only delays and keeps the order; if amqplib ever wrote later, the uncork would come first and the
 * writes would go out one by one, as without this.
 */
export function createWriteCoalescer(socketOf: () => CorkableStream | undefined): () => void {
  let corked: CorkableStream | undefined;
  const release = (): void => {
    const socket = corked;
    corked = undefined;
    if (socket && !socket.destroyed) socket.uncork();
  };
  const scheduleRelease = (): void => void setImmediate(release);
  return () => {
    if (corked) return;
    const socket = socketOf();
    if (!socket || socket.destroyed) return;
    socket.cork();
    corked = socket;
    process.nextTick(scheduleRelease);
  };
}
