"use client";

import { useCombobox, type UseComboboxState, type UseComboboxStateChangeOptions } from "downshift";
import { X } from "lucide-react";
import { useEffect, useMemo, useRef, useState } from "react";
import { formatCount } from "@/components/ui/format";
import { namesMatching } from "./source-picker";
import styles from "./SourcePicker.module.css";

/** The first choice, "All sources": no source name is empty (lib/sources validates names). */
const ALL = "";

/**
 * The charts' source picker: a combobox (downshift's useCombobox, the WAI-ARIA 1.2 pattern) that finds one
 * name among thousands as you type. Empty, it offers "All sources" and the first names; typed, the names that
 * contain the text (namesMatching), at most 50 at a time with a count of the rest. Arrow keys move, Enter or a
 * click picks, Escape or leaving the field puts back the current choice: only a pick changes the charts.
 */
export function SourcePicker({
  names,
  incomplete,
  value,
  onChange,
}: {
  /** Every source's name; undefined while they load. */
  names: readonly string[] | undefined;
  /** Said below the list when `names` are known not to be every source's. */
  incomplete?: string;
  value: string | null;
  onChange: (source: string | null) => void;
}) {
  const [text, setText] = useState(value ?? "");
  // A choice made elsewhere (the clear button, Back) shows in the field.
  const [textFor, setTextFor] = useState(value);
  if (textFor !== value) {
    setTextFor(value);
    setText(value ?? "");
  }
  // The field still reading the current choice offers every name, as if empty; typing narrows them.
  const query = text === (value ?? ALL) ? "" : text.trim();
  const { shown, more } = useMemo(() => namesMatching(names ?? [], query), [names, query]);
  // The current choice stays pickable while the names load (or if it is no longer a source).
  const items = useMemo(() => {
    if (query) return shown;
    return [ALL, ...(value && !shown.includes(value) ? [value, ...shown] : shown)];
  }, [shown, query, value]);
  const { isOpen, highlightedIndex, getInputProps, getMenuProps, getItemProps } = useCombobox<string>({
    items,
    itemToString: (item) => item ?? "",
    selectedItem: value ?? ALL,
    inputValue: text,
    defaultHighlightedIndex: 0,
    onInputValueChange: ({ inputValue }) => setText(inputValue),
    onSelectedItemChange: ({ selectedItem }) => onChange(selectedItem ? selectedItem : null),
    stateReducer: keepChoiceOnBlur,
  });
  // Opened near the bottom of the window (the Trends header sits below the table), the list scrolls into view,
  // and again when it grows (the names arrive, or a failed read's note appears).
  const popup = useRef<HTMLDivElement>(null);
  const loaded = names !== undefined;
  useEffect(() => {
    if (isOpen) popup.current?.scrollIntoView({ block: "nearest" });
  }, [isOpen, loaded, incomplete]);
  return (
    <div className={styles.picker}>
      <input
        {...getInputProps({ "aria-label": "Source shown in the charts", onFocus: (e) => e.currentTarget.select() })}
        className={`input input--small ${styles.input}`}
        placeholder="All sources"
        spellCheck={false}
      />
      {value && (
        <button type="button" className={styles.clear} aria-label="Show all sources" title="Show all sources" onClick={() => onChange(null)}>
          <X size={14} aria-hidden="true" />
        </button>
      )}
      <div ref={popup} className={styles.popup} hidden={!isOpen}>
        <ul {...getMenuProps({ "aria-label": "Sources" })} className={styles.menu}>
          {isOpen &&
            items.map((item, index) => (
              <li
                key={item || "(all)"}
                {...getItemProps({ item, index })}
                className={styles.option}
                data-highlighted={highlightedIndex === index || undefined}
                data-selected={item === (value ?? ALL) || undefined}
              >
                {item === ALL ? <span className={styles.all}>All sources</span> : <span className="mono">{item}</span>}
              </li>
            ))}
        </ul>
        {isOpen && (names === undefined || items.length === 0 || more > 0 || incomplete) && (
          <p className={styles.note} role="status">
            {names === undefined
              ? "Loading source names…"
              : items.length === 0
                ? `No source name contains “${query}”.`
                : more > 0
                  ? `${formatCount(more)} more ${query ? "match" : "sources"}: type part of a name to find one.`
                  : null}
            {names !== undefined && incomplete && ` ${incomplete}`}
          </p>
        )}
      </div>
    </div>
  );
}

/** Leaving the field (a click elsewhere, Tab) or Escape puts back the current choice; it never picks what was highlighted. */
function keepChoiceOnBlur(state: UseComboboxState<string>, { type, changes }: UseComboboxStateChangeOptions<string>): Partial<UseComboboxState<string>> {
  if (type === useCombobox.stateChangeTypes.InputBlur || type === useCombobox.stateChangeTypes.InputKeyDownEscape) {
    return { ...changes, isOpen: false, selectedItem: state.selectedItem, inputValue: state.selectedItem ?? "" };
  }
  return changes;
}
