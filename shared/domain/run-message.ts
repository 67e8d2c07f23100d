/** The message on the dispatch and relay queues: ids only, never a secret. */
export interface RunMessage {
  readonly runId: string;
}

export const encodeRunMessage = (runId: string): string => JSON.stringify({ runId } satisfies RunMessage);

export function decodeRunMessage(body: string): RunMessage | undefined {
  try {
    const value: unknown = JSON.parse(body);
    if (typeof value === 'object' && value !== null && typeof (value as RunMessage).runId === 'string') {
      return { runId: (value as RunMessage).runId };
    }
  } catch {
    // fall through: a poison message
  }
  return undefined;
}
