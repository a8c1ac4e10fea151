import { useEffect, useState } from "preact/hooks";
import { getJSON } from "./api.js";

// fmtTime renders an ISO time in the browser's zone, to the second.
export function fmtTime(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return iso;
  return d.toLocaleString(undefined, { year: "numeric", month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

export function fmtNum(n, digits = 0) {
  return Number(n || 0).toLocaleString(undefined, { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

// ScrollTable is a table that scrolls sideways on narrow screens; the
// region is focusable so keyboard users can scroll it too.
export function ScrollTable({ label, children }) {
  return (
    <div class="scroll" role="region" aria-label={label} tabIndex={0}>
      <table>{children}</table>
    </div>
  );
}

// Status renders a status code with its class for colour (never colour
// alone: the number is the information).
export function Status({ code }) {
  const cls = code >= 500 ? "bad" : code >= 400 ? "warn" : "ok";
  return <span class={"status " + cls}>{code}</span>;
}

// useCatalog loads the provider catalog once per view.
export function useCatalog() {
  const [catalog, setCatalog] = useState(null);
  const [error, setError] = useState("");
  useEffect(() => {
    getJSON("/v1/providers").then((c) => setCatalog(c.data || [])).catch((e) => setError(e.message));
  }, []);
  return [catalog, error];
}

// ErrorText shows a failure for screen readers and eyes alike.
export function ErrorText({ children }) {
  if (!children) return null;
  return <p class="error" role="alert">{children}</p>;
}
