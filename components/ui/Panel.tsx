import { useId, type ComponentProps, type ReactNode } from "react";
import { clsx } from "clsx";
import panelStyles from "./Panel.module.css";
import textStyles from "./text.module.css";

/**
 * A titled box on a screen: the title (labelling the region), an optional badge beside it and actions
 * pushed to the right, then the content. `wide` spans the page (forms, the wizard); otherwise it keeps to
 * a readable width. `as="article"` for one item of a list (a source card).
 */
export function Panel({
  title,
  level = 2,
  titleClassName = clsx(textStyles.sectionTitle, textStyles.flush),
  titleId,
  badge,
  actions,
  wide = false,
  as: Tag = "section",
  className,
  children,
  ...rest
}: {
  title?: ReactNode;
  level?: 2 | 3;
  titleClassName?: string;
  /** A fixed id for the title (otherwise one is generated). */
  titleId?: string;
  badge?: ReactNode;
  actions?: ReactNode;
  wide?: boolean;
  as?: "section" | "article";
  className?: string;
  children: ReactNode;
} & Omit<ComponentProps<"section">, "title" | "className" | "children">) {
  const generated = useId();
  const id = titleId ?? generated;
  const Heading = level === 2 ? "h2" : "h3";
  const classes = clsx(panelStyles.panel, wide && panelStyles.wide, className);
  const heading = title !== undefined && (
    <Heading className={titleClassName} id={id}>
      {title}
    </Heading>
  );
  return (
    <Tag className={classes} aria-labelledby={title !== undefined ? id : undefined} {...rest}>
      {badge || actions ? (
        <header className={panelStyles.header}>
          {heading}
          {badge}
          {actions && <div className={panelStyles.actions}>{actions}</div>}
        </header>
      ) : (
        heading
      )}
      {children}
    </Tag>
  );
}
