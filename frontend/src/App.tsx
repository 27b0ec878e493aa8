import type { ComponentType } from "react";
import { BrowserRouter, Link, Route, Routes, useParams } from "react-router";
import { Layout } from "./components/Layout";
import { EmptyState } from "./components/ui";
import { Export } from "./pages/Export";
import { History } from "./pages/History";
import { LiveRun } from "./pages/LiveRun";
import { NewRun } from "./pages/NewRun";
import { Profiles } from "./pages/Profiles";
import { Webhooks } from "./pages/Webhooks";
import { Queries } from "./pages/Queries";
import { QueryDetail } from "./pages/QueryDetail";
import { RunDetail } from "./pages/RunDetail";
import { SignIn } from "./pages/SignIn";
import { SessionProvider } from "./session";

function NotFound() {
  return (
    <div className="page">
      <EmptyState title="There is no page here.">
        <Link to="/">Start a new run</Link> or open the <Link to="/history">history</Link>.
      </EmptyState>
    </div>
  );
}

/** A fresh screen (no state carried over) when only the route's parameter changes, e.g. from one run to another. */
function keyed(Screen: ComponentType, param: string) {
  return function KeyedScreen() {
    const params = useParams();
    return <Screen key={params[param]} />;
  };
}

const LiveRunScreen = keyed(LiveRun, "id");
const RunDetailScreen = keyed(RunDetail, "id");
const QueryDetailScreen = keyed(QueryDetail, "name");

export function AppRoutes() {
  return (
    <Routes>
      <Route path="/signin" element={<SignIn />} />
      <Route element={<Layout />}>
        <Route index element={<NewRun />} />
        <Route path="runs/new" element={<NewRun />} />
        <Route path="runs/:id" element={<RunDetailScreen />} />
        <Route path="runs/:id/live" element={<LiveRunScreen />} />
        <Route path="history" element={<History />} />
        <Route path="queries" element={<Queries />} />
        <Route path="queries/:name" element={<QueryDetailScreen />} />
        <Route path="profiles" element={<Profiles />} />
        <Route path="webhooks" element={<Webhooks />} />
        <Route path="export" element={<Export />} />
        <Route path="*" element={<NotFound />} />
      </Route>
    </Routes>
  );
}

export function App() {
  return (
    <BrowserRouter>
      <SessionProvider>
        <AppRoutes />
      </SessionProvider>
    </BrowserRouter>
  );
}
