import type { ReactNode } from "react";
import { CircleCheck, CircleMinus, CircleX, TriangleAlert, type LucideIcon } from "lucide-react";
import { Icon } from "./Icon";

/** The tones a state can take: good, needs a look, failed, inactive. */
export type Tone = "ok" | "warn" | "error" | "off";

const TONE_CLASS: Record<Tone, string> = {
  ok: "status status--ok",
  warn: "status status--warn",
  error: "status status--error",
  off: "status status--off",
};

/** Each tone has a shape too, so a state never rests on its colour alone (WCAG 1.4.1). */
const TONE_ICON: Record<Tone, LucideIcon> = { ok: CircleCheck, warn: TriangleAlert, error: CircleX, off: CircleMinus };

/**
 * A state as a small coloured label (the global .status primitive) with its tone's icon; without a tone, a
 * plain label (a kind, a stored status the console does not judge). The one way a screen shows a state.
 */
export function Status({ tone, title, children, ...data }: { tone?: Tone; title?: string; children: ReactNode } & { [k: `data-${string}`]: string | undefined }) {
  return (
    <span className={tone ? TONE_CLASS[tone] : "status"} title={title} {...data}>
      {tone && <Icon icon={TONE_ICON[tone]} size="xs" />}
      {children}
    </span>
  );
}
