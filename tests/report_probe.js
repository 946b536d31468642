// Appended to a kv-report page by tests/kv-report.bats: measures what
// headless Chromium rendered and writes it as lines into a new pre
// element of id "probe" at the end of the body (read back from
// --dump-dom).
//   order TAG ltr|reversed X@Y,...  per rendered text node holding "def":
//                                  where its d, e and f are (left to
//                                  right, or on a later line: ltr)
//   overlap CHART "TEXT" "TEXT"    two text boxes of one chart meeting by
//                                  more than 3 px both ways (stacked
//                                  12 px legend rows touch by their
//                                  line boxes' leading only)
//   chart CHART texts N overlaps N
(function () {
	var out = [], skip = {title: 1, script: 1, style: 1, pre: 1};
	var w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (var n; (n = w.nextNode());) {
		var i = n.data.indexOf('def');
		if (i < 0 || skip[n.parentNode.localName])
			continue;
		var xs = [], ok = 1;
		for (var k = 0; k < 3; k++) {
			var g = document.createRange();
			g.setStart(n, i + k);
			g.setEnd(n, i + k + 1);
			xs.push(g.getBoundingClientRect());
		}
		// left to right on a line, or on a later line (a wrapped cell)
		for (k = 1; k < 3; k++)
			if (!(xs[k].top > xs[k - 1].bottom - 2 ||
			      (Math.abs(xs[k].top - xs[k - 1].top) < 2 && xs[k].left > xs[k - 1].left)))
				ok = 0;
		out.push('order ' + n.parentNode.localName + ' ' + (ok ? 'ltr' : 'reversed') + ' ' +
		         xs.map(function (r) { return Math.round(r.left) + '@' + Math.round(r.top); }).join(','));
	}
	var svgs = document.querySelectorAll('svg.chart');
	for (var s = 0; s < svgs.length; s++) {
		var ts = svgs[s].querySelectorAll('text'), rs = [], bad = 0;
		for (var a = 0; a < ts.length; a++)
			rs.push(ts[a].getBoundingClientRect());
		for (a = 0; a < ts.length; a++)
			for (var b = a + 1; b < ts.length; b++) {
				var p = rs[a], q = rs[b];
				if (Math.min(p.right, q.right) - Math.max(p.left, q.left) > 3 &&
				    Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top) > 3) {
					bad++;
					out.push('overlap ' + svgs[s].id + ' "' + ts[a].textContent + '" "' +
					         ts[b].textContent + '"');
				}
			}
		out.push('chart ' + svgs[s].id + ' texts ' + ts.length + ' overlaps ' + bad);
	}
	var pre = document.createElement('pre');
	pre.id = 'probe';
	pre.textContent = out.join('\n');
	document.body.appendChild(pre);
})();
