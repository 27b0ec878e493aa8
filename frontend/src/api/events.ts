// The live event stream (/api/events) for one run, resumed by cursor after any drop.
//
// The server numbers every event (eventId) and replays everything after ?after=<id>, so the stream keeps the
// last id it delivered and reconnects from there: no step is lost across a network drop, and frames at or
// below the cursor (a replay overlapping what we already have) are ignored.

import type { EventFrame, RunFrame } from "./types";

export type StreamState = "connecting" | "live" | "reconnecting" | "closed" | "unauthorized";

export const CLOSE_BAD_REQUEST = 4400;
export const CLOSE_UNAUTHENTICATED = 4401;
export const CLOSE_TOO_FAR_BEHIND = 4408;

export interface StreamHandlers {
  /** Every run frame, once, in eventId order. */
  onFrame(frame: RunFrame): void;
  onState?(state: StreamState): void;
  /** The socket is open. `resumed` is false when there is no cursor yet (the caller should re-read the run to
   * cover what happened before this connection) and true when the server replays from the cursor. */
  onOpen?(resumed: boolean): void;
  /** The server no longer has the events after our cursor: re-read the run. */
  onResync?(): void;
}

export interface WebSocketLike {
  onopen: ((event: Event) => void) | null;
  onmessage: ((event: MessageEvent) => void) | null;
  onclose: ((event: CloseEvent) => void) | null;
  onerror: ((event: Event) => void) | null;
  close(code?: number, reason?: string): void;
}

export type WebSocketFactory = (url: string) => WebSocketLike;

export interface StreamOptions {
  runId?: string;
  /** Resume after this event id (null: from the moment of connecting). */
  after?: number | null;
  handlers: StreamHandlers;
  /** ws(s)://host of the service; defaults to this page's host. */
  base?: string;
  createSocket?: WebSocketFactory;
  /** Delays before reconnect attempts, in ms; the last one repeats. */
  backoff?: readonly number[];
  setTimer?: (callback: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  /** Asked when a connection closes before it opened: the service refuses the handshake of a signed-out
   * browser (HTTP 401, which a browser only shows as close code 1006), so a false answer stops the stream. */
  signedIn?: () => Promise<boolean>;
}

export function defaultEventsBase(location: Pick<Location, "protocol" | "host"> = window.location): string {
  return `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}`;
}

export function eventsUrl(base: string, runId: string | undefined, after: number | null): string {
  const params = new URLSearchParams();
  if (after !== null) params.set("after", String(after));
  if (runId) params.set("runId", runId);
  const search = params.toString();
  return `${base}/api/events${search ? `?${search}` : ""}`;
}

const DEFAULT_BACKOFF = [250, 500, 1000, 2000, 4000, 8000];

export class RunStream {
  lastEventId: number | null;
  private socket: WebSocketLike | null = null;
  private stopped = false;
  private attempt = 0;
  private timer: unknown = null;
  private state: StreamState | null = null;
  private readonly options: StreamOptions;

  constructor(options: StreamOptions) {
    this.options = options;
    this.lastEventId = options.after ?? null;
  }

  start(): void {
    this.stopped = false;
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    this.cancelTimer();
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      socket.onclose = null;
      socket.onmessage = null;
      socket.close(1000, "done");
    }
    this.setState("closed");
  }

  /** Reconnect now (e.g. the browser came back online) instead of waiting for the backoff. */
  reconnectNow(): void {
    if (this.stopped || this.socket) return;
    this.cancelTimer();
    this.connect();
  }

  get url(): string {
    const base = this.options.base ?? defaultEventsBase();
    return eventsUrl(base, this.options.runId, this.lastEventId);
  }

  private setState(state: StreamState): void {
    if (state === this.state) return;
    this.state = state;
    this.options.handlers.onState?.(state);
  }

  private cancelTimer(): void {
    if (this.timer !== null) {
      (this.options.clearTimer ?? clearTimeout)(this.timer as ReturnType<typeof setTimeout>);
      this.timer = null;
    }
  }

  private connect(): void {
    this.setState(this.attempt === 0 ? "connecting" : "reconnecting");
    const create = this.options.createSocket ?? ((url: string) => new WebSocket(url) as WebSocketLike);
    const resumed = this.lastEventId !== null;
    let socket: WebSocketLike;
    try {
      socket = create(this.url);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    let opened = false;
    socket.onopen = () => {
      opened = true;
      this.attempt = 0;
      this.setState("live");
      this.options.handlers.onOpen?.(resumed);
    };
    socket.onmessage = (event) => this.receive(event.data);
    socket.onerror = () => {
      // A close event always follows; reconnecting is decided there.
    };
    socket.onclose = (event) => {
      this.socket = null;
      if (this.stopped) return;
      if (event.code === CLOSE_UNAUTHENTICATED) {
        this.stopped = true;
        this.setState("unauthorized");
        return;
      }
      if (event.code === CLOSE_BAD_REQUEST) {
        this.stopped = true;
        this.setState("closed");
        return;
      }
      if (!opened && this.options.signedIn) {
        const signedIn = this.options.signedIn;
        void signedIn()
          .catch(() => true) // the service cannot be reached: keep trying
          .then((yes) => {
            if (this.stopped) return;
            if (yes) {
              this.scheduleReconnect();
            } else {
              this.stopped = true;
              this.setState("unauthorized");
            }
          });
        return;
      }
      // 4408 (too far behind), 1006 (network drop), 1001 (server going away): resume from the cursor.
      this.scheduleReconnect();
    };
  }

  private scheduleReconnect(): void {
    const backoff = this.options.backoff ?? DEFAULT_BACKOFF;
    const delay = backoff[Math.min(this.attempt, backoff.length - 1)] ?? 1000;
    this.attempt += 1;
    this.setState("reconnecting");
    this.timer = (this.options.setTimer ?? setTimeout)(() => {
      this.timer = null;
      if (!this.stopped) this.connect();
    }, delay);
  }

  private receive(data: unknown): void {
    if (typeof data !== "string") return;
    let frame: EventFrame;
    try {
      frame = JSON.parse(data) as EventFrame;
    } catch {
      return;
    }
    if (frame.type === "resync") {
      this.options.handlers.onResync?.();
      return;
    }
    if (typeof frame.eventId !== "number") return;
    if (this.lastEventId !== null && frame.eventId <= this.lastEventId) return; // already delivered
    this.lastEventId = frame.eventId;
    if (this.options.runId && frame.runId !== this.options.runId) return;
    this.options.handlers.onFrame(frame);
  }
}
