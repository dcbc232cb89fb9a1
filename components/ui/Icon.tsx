import type { LucideIcon } from "lucide-react";
import { clsx } from "clsx";
import styles from "./Icon.module.css";

/**
 * The console's icons come from one set (lucide-react) at three sizes, so every icon of a kind is the
 * same size everywhere: "xs" in status labels, "sm" inside small buttons, "md" in the navigation and on
 * buttons, "lg" beside the title of an empty, error or loading state. An icon sits beside a word and is
 * hidden from assistive technology (the word is the name); it never replaces the only label.
 */
export const ICON_SIZES = { xs: 12, sm: 14, md: 16, lg: 20 } as const;

export function Icon({ icon: Glyph, size = "md", spin = false }: { icon: LucideIcon; size?: keyof typeof ICON_SIZES; spin?: boolean }) {
  return (
    <Glyph
      size={ICON_SIZES[size]}
      strokeWidth={size === "lg" ? 1.75 : 2}
      aria-hidden="true"
      focusable="false"
      className={clsx(styles.icon, spin && styles.spin)}
    />
  );
}
