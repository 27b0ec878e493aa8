import { describe, expect, it } from "vitest";
import { RunStream, type StreamState, type WebSocketLike } from "./events";
import type { RunFrame } from "./types";

class FakeSocket implements WebSocketLike {
  onopen: ((event: Event) => void) | null = null;
  onmessage: ((event: MessageEvent) => void) | null = null;
  onclose: ((event: CloseEvent) => void) | null = null;
  onerror: ((event: Event) => void) | null = null;
  closedWith: number | null = null;
  constructor(readonly url: string) {}
  open() {
    this.onopen?.(new Event("open"));
  }
  deliver(frame: object) {
    this.onmessage?.({ data: JSON.stringify(frame) } as MessageEvent);
  }
  drop(code = 1006) {
    this.onclose?.({ code } as CloseEvent);
  }
  close(code?: number) {
    this.closedWith = code ?? 1000;
  }
}

function harness(after: number | null = null) {
  const sockets: FakeSocket[] = [];
  const frames: RunFrame[] = [];
  const states: StreamState[] = [];
  const opens: boolean[] = [];
  const timers: { callback: () => void; ms: number }[] = [];
  let resyncs = 0;
  const stream = new RunStream({
    runId: "run-1",
    after,
    base: "ws://service.test",
    createSocket: (url) => {
      const socket = new FakeSocket(url);
      sockets.push(socket);
      return socket;
    },
    setTimer: (callback, ms) => {
      timers.push({ callback, ms });
      return timers.length;
    },
    clearTimer: () => undefined,
    handlers: {
      onFrame: (frame) => frames.push(frame),
      onState: (state) => states.push(state),
      onOpen: (resumed) => opens.push(resumed),
      onResync: () => {
        resyncs += 1;
      },
    },
  });
  return { stream, sockets, frames, states, opens, timers, resyncs: () => resyncs };
}

const step = (eventId: number, index: number) => ({
  type: "step",
  eventId,
  runId: "run-1",
  index,
  action: "navigate",
  url: "https://example.com/",
  observation: "HTTP 200",
});

describe("RunStream", () => {
  it("starts from now, then resumes after the last event it delivered", () => {
    const { stream, sockets, frames, opens, timers } = harness();
    stream.start();
    expect(sockets[0]?.url).toBe("ws://service.test/api/events?runId=run-1");
    sockets[0]!.open();
    sockets[0]!.deliver(step(41, 0));
    sockets[0]!.deliver({ type: "screenshot", eventId: 42, runId: "run-1", index: 0, url: "/shot" });
    sockets[0]!.drop(1006);

    expect(timers).toHaveLength(1);
    timers[0]!.callback();
    expect(sockets[1]?.url).toBe("ws://service.test/api/events?after=42&runId=run-1");
    sockets[1]!.open();
    // The server replays from the cursor; anything at or below it is not delivered twice.
    sockets[1]!.deliver({ type: "screenshot", eventId: 42, runId: "run-1", index: 0, url: "/shot" });
    sockets[1]!.deliver(step(43, 1));
    expect(frames.map((frame) => frame.eventId)).toEqual([41, 42, 43]);
    expect(opens).toEqual([false, true]);
  });

  it("backs off between attempts and resets after a connection opens", () => {
    const { stream, sockets, timers, states } = harness(10);
    stream.start();
    sockets[0]!.drop();
    timers[0]!.callback();
    sockets[1]!.drop();
    timers[1]!.callback();
    expect(timers.map((timer) => timer.ms)).toEqual([250, 500]);
    sockets[2]!.open();
    sockets[2]!.drop();
    expect(timers[2]!.ms).toBe(250);
    expect(states).toEqual(["connecting", "reconnecting", "live", "reconnecting"]);
    expect(sockets[2]!.url).toContain("after=10");
  });

  it("resumes after being dropped for falling behind (4408) and stops when signed out (4401)", () => {
    const { stream, sockets, timers, states } = harness();
    stream.start();
    sockets[0]!.open();
    sockets[0]!.deliver(step(7, 0));
    sockets[0]!.drop(4408);
    timers[0]!.callback();
    expect(sockets[1]!.url).toContain("after=7");
    sockets[1]!.drop(4401);
    expect(timers).toHaveLength(1);
    expect(states.at(-1)).toBe("unauthorized");
  });

  it("stops when a handshake is refused and the session is gone, and retries while it is not", async () => {
    let signedIn = true;
    const sockets: FakeSocket[] = [];
    const states: StreamState[] = [];
    const timers: (() => void)[] = [];
    const stream = new RunStream({
      runId: "run-1",
      base: "ws://service.test",
      createSocket: (url) => {
        const socket = new FakeSocket(url);
        sockets.push(socket);
        return socket;
      },
      setTimer: (callback) => timers.push(callback),
      clearTimer: () => undefined,
      signedIn: async () => signedIn,
      handlers: { onFrame: () => undefined, onState: (state) => states.push(state) },
    });
    stream.start();
    sockets[0]!.drop(); // refused before it opened, but still signed in (a restart, say): retry
    await Promise.resolve();
    await Promise.resolve();
    expect(timers).toHaveLength(1);
    timers[0]!();
    signedIn = false;
    sockets[1]!.drop(); // refused, and the session is gone: stop
    await Promise.resolve();
    await Promise.resolve();
    expect(timers).toHaveLength(1);
    expect(states.at(-1)).toBe("unauthorized");
  });

  it("ignores other runs' frames and garbage, and asks for a re-read on resync", () => {
    const { stream, sockets, frames, resyncs } = harness();
    stream.start();
    sockets[0]!.open();
    sockets[0]!.onmessage?.({ data: "not json" } as MessageEvent);
    sockets[0]!.deliver({ ...step(5, 0), runId: "run-2" });
    sockets[0]!.deliver({ type: "resync", oldestEventId: 100 });
    sockets[0]!.deliver(step(101, 0));
    expect(frames.map((frame) => frame.eventId)).toEqual([101]);
    expect(resyncs()).toBe(1);
  });

  it("closes quietly when stopped", () => {
    const { stream, sockets, timers, states } = harness();
    stream.start();
    sockets[0]!.open();
    stream.stop();
    expect(sockets[0]!.closedWith).toBe(1000);
    expect(timers).toHaveLength(0);
    expect(states.at(-1)).toBe("closed");
  });
});
