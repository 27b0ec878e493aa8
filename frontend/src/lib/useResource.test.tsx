// @vitest-environment jsdom
import { act, renderHook } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { useThrottled } from "./useResource";

describe("a throttled value", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("follows a change at once, then at most once a second, with the latest value", () => {
    const { result, rerender } = renderHook(({ value }) => useThrottled(value, 1000), { initialProps: { value: 0 } });
    rerender({ value: 1 });
    act(() => void vi.advanceTimersByTime(0));
    expect(result.current).toBe(1);
    rerender({ value: 2 });
    rerender({ value: 3 });
    act(() => void vi.advanceTimersByTime(900));
    expect(result.current).toBe(1);
    act(() => void vi.advanceTimersByTime(100));
    expect(result.current).toBe(3);
  });
});
