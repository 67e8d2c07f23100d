import type { ComponentChildren } from 'preact';
import { ScrollRegion } from './scroll-region.tsx';

/** A column heading; `{ hidden }` names a column of controls for screen readers only. */
export type Column = string | { readonly hidden: string };

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
              ) : (
                <th key={c.hidden} scope="col">
                  <span class="visually-hidden">{c.hidden}</span>
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
