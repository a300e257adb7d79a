//! gpu-lab's HTML report: each table sorts on a click on a column's header (again: the other way). A cell that starts with a number sorts by it (`17.2 T` as 17200, `4 KiB + 0 B` as 4096); other text in natural order; empty cells, `n/a` and `–` last either way.
"use strict";
(function () {
  var MISSING = /^(n\/a|–|—|-|)$/i;
  var NUMBER = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(?:\s?(T|KiB|MiB|GiB|B)(?![A-Za-z/]))?(?=$|[\s%×[(,;])/;
  var SCALE = { T: 1e3, KiB: 1024, MiB: 1048576, GiB: 1073741824, B: 1 };
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function sortKey(cellText) {
    var text = cellText.replace(/\s+/g, " ").trim();
    if (MISSING.test(text)) return { rank: 2 };
    var total = 0;
    var terms = 0;
    var rest = text;
    var match;
    while ((match = NUMBER.exec(rest))) {
      total += parseFloat(match[1]) * (SCALE[match[2]] || 1);
      terms += 1;
      rest = rest.slice(match[0].length);
      var plus = /^ ?\+ ?/.exec(rest);
      if (!plus) break;
      rest = rest.slice(plus[0].length);
    }
    if (terms > 0 && isFinite(total)) return { rank: 0, number: total };
    return { rank: 1, text: text };
  }

  function compare(a, b, direction) {
    if (a.rank !== b.rank) return a.rank - b.rank;
    if (a.rank === 0) return direction * (a.number - b.number);
    if (a.rank === 1) return direction * collator.compare(a.text, b.text);
    return 0;
  }

  function sortBy(table, column, header) {
    var direction = header.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
      cell.removeAttribute("aria-sort");
    });
    header.setAttribute("aria-sort", direction === 1 ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.map.call(body.rows, function (row, index) {
      var cell = row.cells[column];
      return { row: row, index: index, key: sortKey(cell ? cell.textContent : "") };
    });
    rows.sort(function (a, b) {
      return compare(a.key, b.key, direction) || a.index - b.index;
    });
    rows.forEach(function (entry) {
      body.appendChild(entry.row);
    });
  }

  function makeSortable(table) {
    if (!table.tHead || table.tBodies.length === 0 || table.tBodies[0].rows.length < 2) return;
    table.classList.add("sortable");
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, column) {
      var button = document.createElement("button");
      button.type = "button";
      button.title = "sort by this column";
      while (header.firstChild) button.appendChild(header.firstChild);
      header.appendChild(button);
      button.addEventListener("click", function () {
        sortBy(table, column, header);
      });
    });
  }

  document.querySelectorAll("table").forEach(makeSortable);
})();
