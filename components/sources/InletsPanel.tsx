"use client";

import { Plus } from "lucide-react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { ConfirmAction } from "@/components/ui/ConfirmAction";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { formatCount } from "@/components/ui/format";
import { MAX_PREFETCH } from "@/lib/inlets/schema";
import { KIND_LABEL } from "@/components/overview/inlet-lag";
import { addInlet, inletKeys, inletsQuery, removeInlet, type Inlet } from "./inlet-queries";
import { EMPTY_INLET_FORM, inletBody, type InletForm } from "./inlet-form";
import { Table } from "@/components/ui/Table";
import tableStyles from "@/components/ui/Table.module.css";
import formStyles from "@/components/ui/forms.module.css";
import { Icon } from "@/components/ui/Icon";
import { Loading } from "@/components/ui/Loading";

/**
 * A source's inlets (admins; docs/inlets.md): collapsed until opened, so the Sources screen loads
 * nothing more. Open, it lists each inlet of any kind (RabbitMQ, BullMQ, NATS: kind, queue, masked URL, where the event id is read, the consumer's
 * state and lag) with Remove, and adds a RabbitMQ one (BullMQ and NATS ones: the CLI or the API): the AMQP URL is sent once, stored encrypted, never shown again;
 * the server checks it can consume the queue before saving.
 */
export function InletsPanel({ source }: { source: string }) {
  const [open, setOpen] = useState(false);
  const panelId = `inlets-${source}`;
  return (
    <div>
      <button
        type="button"
        className="button button--small"
        aria-expanded={open}
        aria-controls={panelId}
        onClick={() => setOpen(!open)}
      >
        {/* Named "Show inlets of orders": the visible label with its verb and object (WCAG 2.5.3). */}
        <span className="visually-hidden">{open ? "Hide" : "Show"} </span>
        Inlets<span className="visually-hidden"> of {source}</span> <span aria-hidden="true">{open ? "▴" : "▾"}</span>
      </button>
      {open && (
        <section id={panelId} aria-label={`Inlets of ${source}`}>
          <InletList source={source} />
          <AddInletForm source={source} />
        </section>
      )}
    </div>
  );
}

function stateText(i: Inlet): string {
  if (i.state === "error") return `error: ${i.lastError ?? "unknown"}`;
  return i.state === "consuming" ? "consuming" : "not consumed yet";
}

function InletList({ source }: { source: string }) {
  const queryClient = useQueryClient();
  const { data, error, isPending, isFetching, refetch } = useQuery(inletsQuery(source));
  const remove = useMutation({
    mutationFn: (id: string) => removeInlet(id),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: inletKeys.ofSource(source) }),
  });
  if (isPending) {
    return (
      <Loading>Loading inlets…</Loading>
    );
  }
  if (!data) return <ErrorBox title="The inlets could not be loaded" error={error} onRetry={() => void refetch()} retrying={isFetching} />;
  return (
    <>
      {data.length === 0 ? (
        <p className="muted">No inlet: dead letters of {source} arrive only through the API.</p>
      ) : (
        <Table
          caption={`Inlets of ${source}`}
          columns={["Kind", "Queue", "Broker", "Event id from", "State", { label: "Waiting", num: true }, { label: "Stored", num: true }, { label: "Actions", hideLabel: true }]}
        >
          {data.map((i) => (
            <tr key={i.id}>
              <td>{KIND_LABEL[i.kind]}</td>
              <td className="mono">{i.queue}</td>
              <td className="mono">{i.url}</td>
              <td className="mono">{i.eventIdFrom}</td>
              <td>{stateText(i)}</td>
              <td className={tableStyles.num}>{i.lag.messages === null ? "—" : formatCount(i.lag.messages)}</td>
              <td className={tableStyles.num}>{formatCount(i.consumed)}</td>
              <td>
                <ConfirmAction
                  label="Remove"
                  accessibleLabel={`Remove inlet ${i.queue} of ${source}`}
                  prompt="Servers stop consuming it within seconds; its dead letters stay."
                  confirmLabel="Remove inlet"
                  onConfirm={() => remove.mutate(i.id)}
                  pending={remove.isPending}
                  danger
                />
              </td>
            </tr>
          ))}
        </Table>
      )}
      {remove.isError && <ErrorBox title="The inlet was not removed" error={remove.error} />}
    </>
  );
}

function AddInletForm({ source }: { source: string }) {
  const queryClient = useQueryClient();
  const [form, setForm] = useState<InletForm>(EMPTY_INLET_FORM);
  const [invalid, setInvalid] = useState<{ field: keyof InletForm; error: string } | null>(null);
  const [added, setAdded] = useState<string | null>(null);
  const add = useMutation({
    mutationFn: (body: { amqpUrl: string; queue: string; eventIdFrom: string; prefetch: number }) => addInlet(source, body),
    onSuccess: async (inlet) => {
      setForm(EMPTY_INLET_FORM); // the URL (and its password) leaves the page
      setAdded(`Added: ${inlet.queue} at ${inlet.url}. Servers start consuming it within seconds.`);
      await queryClient.invalidateQueries({ queryKey: inletKeys.ofSource(source) });
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    setAdded(null);
    const r = inletBody(form);
    if (!r.ok) return setInvalid(r);
    setInvalid(null);
    add.mutate(r.body);
  };
  const field = (name: keyof InletForm, label: string, hint: string, props: { type?: string; placeholder?: string } = {}) => {
    const id = `inlet-${source}-${name}`;
    return (
      <div className={formStyles.field}>
        <label className={formStyles.label} htmlFor={id}>
          {label}
        </label>
        <input
          className={`input${name === "amqpUrl" ? " input--wide" : ""}`}
          id={id}
          value={form[name]}
          onChange={(e) => setForm({ ...form, [name]: e.target.value })}
          autoComplete="off"
          spellCheck={false}
          aria-invalid={invalid?.field === name ? true : undefined}
          aria-describedby={`${id}-hint`}
          {...props}
        />
        <span className={formStyles.hint} id={`${id}-hint`}>
          {hint}
        </span>
      </div>
    );
  };
  return (
    <form className={formStyles.form} onSubmit={submit} noValidate aria-label={`Add a RabbitMQ inlet to ${source}`}>
      {field("amqpUrl", "AMQP URL", "amqp[s]://user:password@host:5672/vhost: stored encrypted, never shown again", {
        placeholder: "amqps://keyward:…@rabbit.internal/prod",
      })}
      {field("queue", "Queue", "the queue your dead-letter exchange routes to")}
      {field("eventIdFrom", "Event id from", "header:<name>, property:message_id, property:correlation_id or json:<path>")}
      {field("prefetch", "Prefetch", `messages held unacknowledged at once (1–${MAX_PREFETCH})`, { type: "number" })}
      {invalid && (
        <p className={formStyles.error} role="alert">
          {invalid.error}
        </p>
      )}
      <div className={formStyles.actions}>
        <button type="submit" className="button button--primary" disabled={add.isPending}>
              <Icon icon={Plus} />
          {add.isPending ? "Checking the queue…" : "Add inlet"}
        </button>
      </div>
      <p className={formStyles.status} aria-live="polite">
        {added}
      </p>
      {add.isError && <ErrorBox title="The inlet was not added" error={add.error} />}
    </form>
  );
}
