import { useEffect, useState } from "react";
import { Link, NavLink, Navigate, Outlet, useLocation } from "react-router";
import { useSession } from "../session";
import { historySearch } from "../lib/historyFilter";
import { Loading } from "./ui";

const LINKS = [
  { to: "/", label: "New run", end: true },
  { to: "/history", label: "History" },
  { to: "/queries", label: "Queries" },
  { to: "/profiles", label: "Profiles" },
  { to: "/webhooks", label: "Webhooks" },
  { to: "/export", label: "Export" },
];

function NavBar() {
  const { keyName, signOut } = useSession();
  const [open, setOpen] = useState(false);
  const location = useLocation();

  useEffect(() => setOpen(false), [location.pathname]);

  return (
    <header className="topbar">
      <nav className="nav" aria-label="Main">
        <Link to="/" className="brand">
          <img src="/favicon.svg" alt="" width="24" height="24" />
          <span>Web data</span>
        </Link>
        <button
          type="button"
          className="nav-toggle"
          aria-expanded={open}
          aria-controls="nav-menu"
          onClick={() => setOpen((value) => !value)}
        >
          <span className="nav-toggle-bars" aria-hidden="true" />
          Menu
        </button>
        <div id="nav-menu" className={`nav-menu${open ? " open" : ""}`}>
          <ul className="nav-links">
            {LINKS.map((link) => (
              <li key={link.to}>
                <NavLink
                  to={link.to === "/export" ? `/export${historySearch()}` : link.to}
                  end={link.end}
                  className={({ isActive }) =>
                    isActive || (link.to === "/history" && location.pathname.startsWith("/runs/"))
                      ? "active"
                      : undefined
                  }
                >
                  {link.label}
                </NavLink>
              </li>
            ))}
          </ul>
          <div className="nav-user">
            <span className="key-name" title="Signed in with this API key">
              <span className="muted">Key</span> {keyName}
            </span>
            <button type="button" className="button small ghost" onClick={() => void signOut()}>
              Sign out
            </button>
          </div>
        </div>
      </nav>
    </header>
  );
}

/** Every screen but sign-in: the navigation bar, and a redirect to sign in when the session is gone. */
export function Layout() {
  const { status, problem, retry } = useSession();
  const location = useLocation();
  if (status === "loading") return <Loading label="Connecting to the service…" />;
  if (status === "unreachable") {
    return (
      <main className="content narrow">
        <div className="banner banner-error" role="alert">
          <strong className="banner-title">The service cannot be reached</strong>
          <p>{problem}</p>
          <button type="button" className="button" onClick={retry}>
            Try again
          </button>
        </div>
      </main>
    );
  }
  if (status === "signedOut") {
    const next = location.pathname + location.search;
    return <Navigate to={`/signin${next !== "/" ? `?next=${encodeURIComponent(next)}` : ""}`} replace />;
  }
  return (
    <div className="app">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <NavBar />
      <main id="main" className="content">
        <Outlet />
      </main>
    </div>
  );
}
