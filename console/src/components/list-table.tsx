import type { ComponentChildren } from 'preact';
import { ScrollRegion } from './scroll-region.tsx';

/**
 * A column heading; `{ hidden }` names a column of controls for screen readers
 * only; `{ label, width }` gives a column of a fixed-layout table its width
 * (set through the DOM, which the console's `style-src 'self'` allows).
 */
export type Column =
  | string
  | { readonly hidden: string }
  | { readonly label: string; readonly width: string };

/**
 * A list page's table in its scrolling region: one heading row of
 * `columns`, and the rows the page renders as `children`.
 *
 * @example
 * <ListTable label="Assets table" columns={['Type', 'Path', 'Size', { hidden: 'Actions' }]}>{rows}</ListTable>
 */
export function ListTable({
  label,
  columns,
  class: className,
  children,
}: {
  label: string;
  columns: readonly Column[];
  class?: string;
  children: ComponentChildren;
}) {
  return (
    <ScrollRegion label={label}>
      <table class={className}>
        <thead>
          <tr>
            {columns.map((c) =>
              typeof c === 'string' ? (
                <th key={c} scope="col">
                  {c}
                </th>
              ) : 'hidden' in c ? (
                <th key={c.hidden} scope="col">
                  <span class="visually-hidden">{c.hidden}</span>
                </th>
              ) : (
                <th key={c.label} scope="col" style={{ width: c.width }}>
                  {c.label}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </ScrollRegion>
  );
}
