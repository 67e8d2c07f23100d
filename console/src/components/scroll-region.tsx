import type { ComponentChildren } from 'preact';

/**
 * A horizontally scrolling region for a wide table. It takes focus so a
 * keyboard user can scroll it with the arrow keys (WCAG 2.1.1; axe's
 * scrollable-region-focusable), and is named so a screen reader can find it.
 */
export function ScrollRegion({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard to be scrolled
    <section class="table-wrap" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}
