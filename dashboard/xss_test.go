package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/durable"
)

// hostile are values a user might store; each would run script or break
// out of its context if written unescaped.
var hostile = []string{
	`<script>alert("xss")</script>`,
	`"><img src=x onerror=alert(1)>`,
	`'onmouseover='alert(2)`,
	`javascript:alert(3)`,
	`</pre><svg onload=alert(4)>`,
}

// assertEscaped fails if body holds a raw hostile payload or a tag or
// link one would make (escaped text such as "&lt;img src=x onerror=" is
// harmless; "javascript:alert(3)" may appear as text, never as a link).
func assertEscaped(t *testing.T, what, body string) {
	t.Helper()
	for _, h := range hostile {
		if strings.ContainsAny(h, `<>"'`) && strings.Contains(body, h) {
			t.Errorf("%s: the raw payload %q appears unescaped", what, h)
		}
	}
	for _, bad := range []string{`href="javascript:`, "<script>alert", "<img"} {
		if strings.Contains(body, bad) {
			t.Errorf("%s: %q appears in the page", what, bad)
		}
	}
	// The dashboard's own charts are the only svg elements.
	own := strings.Count(body, `<svg class="timeline-chart"`) + strings.Count(body, `<svg id="throughput-chart"`)
	if n := strings.Count(body, "<svg"); n != own {
		t.Errorf("%s: %d <svg elements, %d of them the dashboard's charts", what, n, own)
	}
}

func TestHostileValuesAreEscaped(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testHostileValues(t, newEnv(t)) })
	t.Run("cosmostest", func(t *testing.T) { testHostileValues(t, newCosmosEnv(t)) })
}

func testHostileValues(t *testing.T, e *env) {
	var ids []string
	for i, h := range hostile {
		// The id, the input, the output, the custom status and a KV key and
		// value are all h; the Wait ones carry h as an event name and the
		// Fail ones as a failure message.
		id := h + "/" + string(rune('a'+i)) + "?q=1#frag%41"
		e.run(id+"-echo", "Echo", h)
		e.run(id+"-fail", "Fail", h)
		e.run(id+"-wait", "Wait", h)
		// Rich draws h in every new view: the chart's last error and
		// tooltips, the tree's ids (its child and grandchild ids start with
		// id), the output as indented JSON.
		e.run(id+"-rich", "Rich", h)
		ids = append(ids, id+"-echo", id+"-fail", id+"-wait", id+"-rich", id+"-rich::sub::2::2", id+"-rich::sub::2::2::sub::2")
	}
	e.run("parent", "Parent", hostile[0])
	b := newDashboard(t, e, dashboard.Options{})

	code, body := b.get("/")
	if code != http.StatusOK {
		t.Fatalf("list: %d", code)
	}
	assertEscaped(t, "list", body)
	for _, h := range hostile {
		_, body = b.get("/?" + url.Values{"name": {h}, "prefix": {h}, "parent": {h}}.Encode())
		assertEscaped(t, "list filtered by "+h, body)
		_, body = b.get("/?" + url.Values{"after": {h}}.Encode())
		assertEscaped(t, "error page for "+h, body)
	}
	for _, id := range ids {
		path := "/instances/" + url.PathEscape(id)
		code, body := b.get(path)
		if code != http.StatusOK || !strings.Contains(body, `href="`+path+`"`) && !strings.Contains(body, "Instance <code") {
			t.Fatalf("%q: %d\n%s", id, code, body)
		}
		assertEscaped(t, "instance "+id, body)
		for _, a := range []string{"cancel", "raise", "purge"} {
			_, body = b.get(path + "/confirm/" + a)
			assertEscaped(t, a+" confirm "+id, body)
		}
	}
	_, body = b.get("/instances/parent::sub::2")
	assertEscaped(t, "child", body)
	// The ids, path-escaped, reach their own pages: '/', '?', '#' and '%'
	// stay in the one path segment.
	_, body = b.get("/instances/" + url.PathEscape(ids[0]))
	esc := "&lt;script&gt;alert(&#34;xss&#34;)&lt;/script&gt;"
	for _, want := range []string{
		esc + "/a?q=1#frag%41-echo",         // the id
		`id="state">Completed`,              // the KV key was accepted
		"<td><code>" + esc + "</code></td>", // the KV key
		`id="custom-status">` + esc,         // the custom status
		`id="output">` + esc,                // the output
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("the echo page lacks %q:\n%s", want, body)
		}
	}
	_, body = b.get("/instances/" + url.PathEscape(ids[2]))
	if !strings.Contains(body, "ExternalSubscribed") || !strings.Contains(body, "<td>"+esc+"</td>") ||
		!strings.Contains(body, `<tr class="work-event"><td>awaited event</td><td>`+esc+"</td>") {
		t.Fatalf("the wait page lacks the escaped event name:\n%s", body)
	}
	// The new views carry the hostile values, escaped.
	_, body = b.get("/instances/" + url.PathEscape(ids[3]))
	for _, want := range []string{
		"last error: flaky: " + esc, // the chart's row
		"failed after",              // a bar's tooltip
		`aria-current="page">` + esc + "/a?q=1#frag%41-rich</a>",          // the tree
		"id=\"output\">{\n  &#34;done&#34;: true,\n  &#34;in&#34;: &#34;", // the indented JSON output
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("the rich page lacks %q:\n%s", want, body)
		}
	}
	_, body = b.get("/queues")
	assertEscaped(t, "queues", body)
}

func TestHostileEventNameInRaiseForm(t *testing.T) {
	e := newEnv(t)
	e.run("w-1", "Wait", hostile[1])
	b := newDashboard(t, e, dashboard.Options{})
	token := b.confirm("w-1", "raise")
	code, loc := b.post("/instances/w-1/raise", url.Values{"csrf": {token}, "name": {hostile[1]}, "data": {hostile[0]}}, nil)
	if code != http.StatusSeeOther {
		t.Fatalf("raise: %d %s", code, loc)
	}
	e.waitFor("w-1", func(st *durable.OrchestrationStatus) bool { return st.IsTerminal() })
	_, body := b.get("/instances/w-1")
	if !strings.Contains(body, "&lt;script&gt;") {
		t.Fatalf("the event data is not shown:\n%s", body)
	}
	assertEscaped(t, "after raise", body)
	// A hostile action name or id in a POST answers with an escaped page.
	_, body = b.post("/instances/"+url.PathEscape(hostile[0])+"/"+url.PathEscape(hostile[1]), url.Values{"csrf": {token}}, nil)
	assertEscaped(t, "unknown action", body)
}

// TestDotIDsOpenTheirPages: ids that are dot segments ("." and ".."),
// start with the escape marker, or hold dot segments between slashes open
// their own instance and confirm pages from the list's links, resolved as
// a browser resolves them (removing dot segments, "%2e" included), not
// the list or another page.
func TestDotIDsOpenTheirPages(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testDotIDs(t, newEnv(t)) })
	t.Run("cosmostest", func(t *testing.T) { testDotIDs(t, newCosmosEnv(t)) })
}

func testDotIDs(t *testing.T, e *env) {
	ids := []string{".", "..", "~", "~.", "~..", "a/..", "../a", "./."}
	for _, id := range ids {
		e.run(id, "Echo", "x")
	}
	b := newDashboard(t, e, dashboard.Options{})
	_, list := b.get("/?size=50")
	links := map[string]string{} // id -> href
	for rest := list; ; {
		i := strings.Index(rest, `<a class="inst" href="`)
		if i < 0 {
			break
		}
		rest = rest[i+len(`<a class="inst" href="`):]
		href := html.UnescapeString(rest[:strings.IndexByte(rest, '"')])
		rest = rest[strings.IndexByte(rest, '>')+1:]
		links[html.UnescapeString(rest[:strings.Index(rest, "</a>")])] = href
	}
	base, err := url.Parse(b.srv.URL + "/")
	must(t, err)
	for _, id := range ids {
		href, ok := links[id]
		if !ok {
			t.Fatalf("the list has no link for %q: %v", id, links)
		}
		for _, path := range []string{href, href + "/confirm/purge"} {
			ref, err := url.Parse(strings.NewReplacer("%2e", ".", "%2E", ".").Replace(path))
			must(t, err)
			resolved := base.ResolveReference(ref).RequestURI()
			code, body := b.get(resolved)
			want := `<code id="instance-id">` + html.EscapeString(id) + `</code>`
			if code != http.StatusOK || !strings.Contains(body, want) {
				t.Fatalf("%q: link %q resolves to %q: %d, want the page of %q\n%s", id, path, resolved, code, id, body)
			}
		}
	}
}
