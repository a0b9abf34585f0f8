// A small Grafana dashboard builder: no library to vendor. Panels are laid
// out left to right in rows 24 columns wide; a row header starts a new line.
local ds = { type: 'prometheus', uid: '${datasource}' };

local target(index, expr, legend, table) =
  {
    refId: std.char(std.codepoint('A') + index),
    datasource: ds,
    expr: expr,
    legendFormat: legend,
  } + (if table then { instant: true, format: 'table' } else {});

// Places the items (rows and panels) on the grid and numbers them.
local layout(items) =
  local step(state, item) =
    if item.type == 'row' then
      local y = state.y + (if state.x > 0 then state.lineH else 0);
      state {
        x: 0,
        y: y + 1,
        lineH: 0,
        id: state.id + 1,
        panels+: [item { id: state.id, gridPos: { h: 1, w: 24, x: 0, y: y } }],
      }
    else
      local wrap = state.x + item.w > 24;
      local x = if wrap then 0 else state.x;
      local y = if wrap then state.y + state.lineH else state.y;
      local lineH = std.max(if wrap then 0 else state.lineH, item.h);
      local full = x + item.w >= 24;
      state {
        x: if full then 0 else x + item.w,
        y: if full then y + lineH else y,
        lineH: if full then 0 else lineH,
        id: state.id + 1,
        panels+: [
          item { id: state.id, gridPos: { h: item.h, w: item.w, x: x, y: y } },
        ],
      };
  std.foldl(step, items, { x: 0, y: 0, lineH: 0, id: 1, panels: [] }).panels;

{
  datasource:: ds,

  row(title):: { type: 'row', title: title, collapsed: false, panels: [] },

  // A panel of `type` with `queries` as [expression, legend] pairs.
  panel(type, title, queries, w=12, h=8, desc='', unit=null, extra={})::
    {
      type: type,
      title: title,
      description: desc,
      datasource: ds,
      w:: w,
      h:: h,
      targets: [
        target(i, queries[i][0], queries[i][1], type == 'table')
        for i in std.range(0, std.length(queries) - 1)
      ],
      fieldConfig: {
        defaults: if unit != null then { unit: unit } else {},
        overrides: [],
      },
      options: {},
    } + extra,

  // Merges the queries of a table panel into one row per series.
  merge:: { transformations: [{ id: 'merge', options: {} }] },

  // A multi-value variable listing the values of label `name` of `metric`.
  queryVariable(name, label, metric, selector)::
    local query = 'label_values(%s{%s}, %s)' % [metric, selector, name];
    {
      name: name,
      label: label,
      type: 'query',
      datasource: ds,
      definition: query,
      query: { query: query, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
      includeAll: true,
      multi: true,
      allValue: '.*',
      current: { selected: true, text: ['All'], value: ['$__all'] },
      refresh: 2,
      sort: 1,
      hide: 0,
    },

  dashboard(config, name, title, description, items, variables, annotations=[])::
    {
      __inputs: [{
        name: 'DS_PROMETHEUS',
        label: 'Prometheus',
        description: 'Prometheus scraping zk-election-exporter',
        type: 'datasource',
        pluginId: 'prometheus',
        pluginName: 'Prometheus',
      }],
      __requires: [
        { type: 'grafana', id: 'grafana', name: 'Grafana', version: '9.0.0' },
        { type: 'datasource', id: 'prometheus', name: 'Prometheus', version: '1.0.0' },
      ],
      title: title,
      uid: config.uidPrefix + name,
      description: description,
      tags: config.tags,
      timezone: config.timezone,
      schemaVersion: 38,
      version: 1,
      editable: true,
      time: { from: config.from, to: 'now' },
      refresh: config.refresh,
      graphTooltip: 1,
      templating: {
        list: [{
          name: 'datasource',
          label: 'Data source',
          type: 'datasource',
          query: 'prometheus',
          regex: config.datasourceRegex,
          current: {},
          hide: 0,
          refresh: 1,
        }] + variables,
      },
      annotations: { list: annotations },
      panels: layout(items),
    },
}
