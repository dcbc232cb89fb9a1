"use client";

import { useQuery } from "@tanstack/react-query";
import { CircleAlert, Database, Inbox, RotateCcw, Search, type LucideIcon } from "lucide-react";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect, useId, useRef, useState, type KeyboardEvent } from "react";
import type { SearchResult } from "@/lib/search/schema";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { Time } from "@/components/ui/Time";
import { searchQueryOptions } from "./queries";
import styles from "./search.module.css";

const ICONS: Record<SearchResult["kind"], LucideIcon> = { event: Inbox, dead_letter: CircleAlert, replay: RotateCcw, source: Database };

/** Typing in a field (or an editable element): "/" is a character there, not the shortcut. */
function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName);
}

/**
 * The global search (Linear/Vercel): a button in the top bar, and `/` or Cmd-K (Ctrl-K) from any page,
 * open a dialog that finds an event id, a dead letter, a replay or a source as you type (GET
 * /api/v1/search). Arrow keys move through the results, Enter opens the first (or the focused) one,
 * Escape closes.
 */
export function GlobalSearch() {
  const router = useRouter();
  const dialog = useRef<HTMLDialogElement>(null);
  const input = useRef<HTMLInputElement>(null);
  const list = useRef<HTMLUListElement>(null);
  const [text, setText] = useState("");
  const [q, setQ] = useState("");
  const inputId = useId();
  const search = useQuery(searchQueryOptions(q));

  useEffect(() => {
    const t = setTimeout(() => setQ(text.trim()), 150);
    return () => clearTimeout(t);
  }, [text]);

  const open = () => {
    if (!dialog.current?.open) dialog.current?.showModal();
    input.current?.select();
  };
  const close = () => dialog.current?.close();

  useEffect(() => {
    const onKey = (e: globalThis.KeyboardEvent) => {
      const slash = e.key === "/" && !e.metaKey && !e.ctrlKey && !e.altKey && !isTyping(e.target);
      const cmdK = (e.metaKey || e.ctrlKey) && e.key.toLowerCase() === "k";
      if (slash || cmdK) {
        e.preventDefault();
        open();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);

  const links = () => Array.from(list.current?.querySelectorAll<HTMLAnchorElement>("a") ?? []);
  const onListKey = (e: KeyboardEvent) => {
    const all = links();
    const at = all.indexOf(document.activeElement as HTMLAnchorElement);
    if (e.key === "ArrowDown" && at < all.length - 1) {
      e.preventDefault();
      all[at + 1].focus();
    } else if (e.key === "ArrowUp") {
      e.preventDefault();
      if (at <= 0) input.current?.focus();
      else all[at - 1].focus();
    }
  };
  const onInputKey = (e: KeyboardEvent) => {
    if (e.key === "ArrowDown") {
      e.preventDefault();
      links()[0]?.focus();
    } else if (e.key === "Enter") {
      e.preventDefault();
      const first = search.data?.query === text.trim() ? search.data.results[0] : undefined;
      if (first) {
        close();
        router.push(first.href);
      }
    }
  };

  const results = search.data?.results ?? [];
  const settled = q === text.trim() && !search.isFetching;
  return (
    <>
      <button type="button" className={`button button--small ${styles.trigger}`} onClick={open} aria-keyshortcuts="/ Control+K Meta+K">
        <Search size={14} aria-hidden="true" />
        Search
        <kbd className={styles.kbd} aria-hidden="true">
          /
        </kbd>
      </button>
      <dialog ref={dialog} className={styles.dialog} aria-label="Search" onClose={() => setText("")}>
        <div className={styles.field}>
          <Search size={16} aria-hidden="true" />
          <label htmlFor={inputId} className="visually-hidden">
            Search
          </label>
          <input
            ref={input}
            id={inputId}
            className={styles.input}
            type="search"
            autoComplete="off"
            spellCheck={false}
            placeholder="Event id, dead letter, replay or source"
            value={text}
            onChange={(e) => setText(e.target.value)}
            onKeyDown={onInputKey}
          />
          <kbd className={styles.kbd}>Esc</kbd>
        </div>
        {!text.trim() ? (
          <p className={styles.hint}>Paste an event id (or its beginning), a dead letter or replay id, or a source name.</p>
        ) : search.isError ? (
          <div className={styles.hint}>
            <ErrorBox title="Search failed" error={search.error} onRetry={() => void search.refetch()} retrying={search.isFetching} />
          </div>
        ) : results.length === 0 ? (
          <p className={styles.hint} aria-live="polite">
            {settled ? `Nothing found for “${text.trim()}”.` : "Searching…"}
          </p>
        ) : (
          <ul ref={list} className={styles.results} aria-label="Search results" onKeyDown={onListKey}>
            {results.map((r) => {
              const Icon = ICONS[r.kind];
              return (
                <li key={`${r.kind}/${r.href}`}>
                  <Link className={styles.result} href={r.href} prefetch={false} onClick={close}>
                    <Icon className={styles.resultIcon} size={16} aria-hidden="true" />
                    <span className={styles.resultText}>
                      <span className={`mono ${styles.resultLabel}`}>{r.label}</span>
                      <span className="muted small">
                        {r.detail}
                        {r.at && (
                          <>
                            {" · "}
                            <Time iso={r.at} />
                          </>
                        )}
                      </span>
                    </span>
                  </Link>
                </li>
              );
            })}
          </ul>
        )}
      </dialog>
    </>
  );
}
