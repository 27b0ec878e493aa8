import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from "react";
import { describeError, setUnauthorizedListener } from "./api/client";
import { session as sessionApi } from "./api/endpoints";

export type SessionStatus = "loading" | "signedIn" | "signedOut" | "unreachable";

interface SessionValue {
  status: SessionStatus;
  keyName: string | null;
  problem: string | null;
  signIn(key: string): Promise<void>;
  signOut(): Promise<void>;
  retry(): void;
}

const SessionContext = createContext<SessionValue | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [status, setStatus] = useState<SessionStatus>("loading");
  const [keyName, setKeyName] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    let active = true;
    // Also sets the csrftoken cookie that every write echoes.
    sessionApi
      .get()
      .then((answer) => {
        if (!active) return;
        setKeyName(answer.keyName);
        setStatus(answer.signedIn ? "signedIn" : "signedOut");
        setProblem(null);
      })
      .catch((error: unknown) => {
        if (!active) return;
        setProblem(describeError(error));
        setStatus("unreachable");
      });
    return () => {
      active = false;
    };
  }, [attempt]);

  useEffect(() => {
    setUnauthorizedListener(() => {
      setStatus("signedOut");
      setKeyName(null);
    });
    return () => setUnauthorizedListener(null);
  }, []);

  const signIn = useCallback(async (key: string) => {
    const answer = await sessionApi.signIn(key);
    setKeyName(answer.keyName);
    setStatus("signedIn");
  }, []);

  const signOut = useCallback(async () => {
    try {
      await sessionApi.signOut();
    } finally {
      setKeyName(null);
      setStatus("signedOut");
    }
  }, []);

  const retry = useCallback(() => {
    setStatus("loading");
    setAttempt((n) => n + 1);
  }, []);

  const value = useMemo(
    () => ({ status, keyName, problem, signIn, signOut, retry }),
    [status, keyName, problem, signIn, signOut, retry],
  );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionValue {
  const value = useContext(SessionContext);
  if (!value) throw new Error("useSession outside SessionProvider");
  return value;
}
