import { connect, type Socket } from 'node:net';

export interface RawResponse {
  /** Every status line the server wrote, interim ones (100 Continue) included. */
  readonly statusLines: readonly string[];
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly json: any;
}

function dechunk(body: string): string {
  let out = '';
  let rest = body;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    if (eol < 0) return out;
    const size = Number.parseInt(rest.slice(0, eol), 16);
    if (!(size > 0)) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}

/** Parse what a server wrote on one connection: interim answers, then the final one. */
export function parseRawResponse(text: string): RawResponse {
  const statusLines: string[] = [];
  let rest = text;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    const head = end < 0 ? rest : rest.slice(0, end);
    const [statusLine = '', ...headerLines] = head.split('\r\n');
    statusLines.push(statusLine);
    rest = end < 0 ? '' : rest.slice(end + 4);
    const status = Number(statusLine.split(' ')[1]);
    if (status >= 200 || end < 0) {
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const body = headers['transfer-encoding'] === 'chunked' ? dechunk(rest) : rest;
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      return { statusLines, status, headers, body, json };
    }
  }
}

export interface RawExchange {
  readonly response: RawResponse;
  /** Bytes of the body the client had written when the connection closed. */
  readonly bodyBytesSent: number;
  /** Bytes of the body the client had written when the first answer bytes arrived (only when sending a body). */
  readonly answeredAfterBytes: number | undefined;
}

/**
 * Send `head` (request line and headers, as bytes on the wire) over a fresh
 * TCP connection, then up to `bodyBytes` of body in 64 KiB chunks, and
 * collect everything the server writes until it closes the connection.
 * Fails after `timeoutMs` if the server neither answers nor closes.
 */
export function rawExchange(
  port: number,
  head: string,
  {
    bodyBytes = 0,
    timeoutMs = 5_000,
    endOnAnswer = true,
  }: {
    bodyBytes?: number;
    timeoutMs?: number;
    /** Stop sending and close our side once an answer arrives, as curl does; false keeps the connection open. */
    endOnAnswer?: boolean;
  } = {},
): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let text = '';
    let sent = 0;
    let answeredAfter: number | undefined;
    let closed = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer and no close within ${timeoutMs} ms; got so far: ${JSON.stringify(text)}`));
    }, timeoutMs);
    let answered = false;
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (!answered && bodyBytes > 0) {
        answered = true;
        answeredAfter = sent;
        if (endOnAnswer) socket.end();
      }
    });
    // The server may reset a connection whose body it refused to read: that is an answer too.
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
      clearTimeout(timer);
      resolve({ response: parseRawResponse(text), bodyBytesSent: sent, answeredAfterBytes: answeredAfter });
    });
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const pump = () => {
      while (!closed && !(answered && endOnAnswer) && sent < bodyBytes) {
        const part = chunk.subarray(0, Math.min(chunk.length, bodyBytes - sent));
        sent += part.length;
        if (!socket.write(part)) {
          socket.once('drain', pump);
          return;
        }
      }
    };
    socket.write(head, 'latin1', pump);
  });
}
