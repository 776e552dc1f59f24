package durablecheck

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/tools/go/types/typeutil"
)

// What to use instead, per rule. The names are the durable package's.
const (
	adviceNow     = "use ctx.UTCNow(), which records the time in history so replays see the same value"
	adviceSleep   = "use durable.NewTimer(ctx, d), a durable timer, and Await it"
	adviceRand    = "take random values from ctx.NewGUID() or from an activity, so replays see the same value"
	adviceUUID    = "use ctx.NewGUID(), which records the value in history"
	adviceGo      = "use durable.Go(ctx, fn), a deterministic concurrent block"
	adviceChan    = "wait on durable futures instead: durable.Go for concurrent blocks, ctx.Select, ctx.WaitAll or durable.Join to combine them, durable.WaitEvent or durable.DequeueEvent for messages from outside"
	adviceSelect  = "use ctx.Select(futures...) to race durable futures"
	adviceSync    = "orchestration code runs one block at a time and needs no locks; use durable.Go and durable.Join (or ctx.WaitAll) for concurrency"
	adviceMap     = "map order is random; range over the sorted keys (slices.Sorted(maps.Keys(m)))"
	adviceIO      = "do I/O in an activity (durable.CallActivity) or pass the value in the orchestration's input"
	adviceLog     = "use ctx.Logger() or ctx.TraceInfo (and friends), which do not log again on replay"
	adviceGlobals = "keep state in locals, the orchestration's input and output, or ctx.SetKVValue"
	advicePatch   = "pass a constant (a string literal or const): the id names the change in history, and a computed one can differ on replay or name another change"
)

// patchCalls are the context's methods whose first argument is a change id.
var patchCalls = map[string]bool{"Patched": true, "DeprecatePatch": true}

// timeFuncs are the time package's clock readers and waiters.
var timeFuncs = map[string]string{
	"Now": adviceNow, "Since": adviceNow, "Until": adviceNow,
	"Sleep": adviceSleep, "After": adviceSleep, "AfterFunc": adviceSleep,
	"Tick": adviceSleep, "NewTimer": adviceSleep, "NewTicker": adviceSleep,
}

// ioPackages are packages every function of which does I/O (or starts it).
var ioPackages = map[string]bool{
	"net": true, "net/http": true, "net/rpc": true, "net/smtp": true,
	"io/ioutil": true, "os/exec": true, "os/signal": true, "syscall": true,
}

// osPure are the os package's functions that do no I/O.
var osPure = map[string]bool{
	"IsExist": true, "IsNotExist": true, "IsPermission": true, "IsTimeout": true,
	"IsPathSeparator": true, "NewSyscallError": true,
}

// filepathIO are path/filepath's functions that read the file system.
var filepathIO = map[string]bool{
	"Abs": true, "EvalSymlinks": true, "Glob": true, "Walk": true, "WalkDir": true,
}

// ruleFor reports whether a use of fn is not replay-safe, naming it and
// what to use instead.
func ruleFor(fn *types.Func) (what, advice string, bad bool) {
	if fn.Pkg() == nil {
		return "", "", false
	}
	path, name := fn.Pkg().Path(), fn.Name()
	what = qualifiedName(fn)
	isMethod := fn.Signature().Recv() != nil
	switch {
	case path == "time" && !isMethod:
		advice, bad = timeFuncs[name]
	case path == "math/rand" || path == "math/rand/v2" || path == "crypto/rand":
		advice, bad = adviceRand, true
		what = path + "." + name
	case path == "github.com/google/uuid" && !isMethod && strings.HasPrefix(name, "New"):
		advice, bad = adviceUUID, true
	case path == "sync" || path == "sync/atomic":
		advice, bad = adviceSync, true
	case ioPackages[path] || strings.HasPrefix(path, "net/http/"):
		advice, bad = adviceIO, true
		what = path + "." + name
	case path == "os":
		advice, bad = adviceIO, !osPure[name]
	case path == "path/filepath":
		advice, bad = adviceIO, filepathIO[name]
	case path == "fmt":
		advice, bad = adviceLog, name == "Print" || name == "Printf" || name == "Println"
	case (path == "log" || path == "log/slog") && !isMethod:
		// Only the default loggers: a *slog.Logger may be ctx.Logger().
		advice, bad = adviceLog, isLogOutput(name)
	}
	return what, advice, bad
}

// isLogOutput reports whether a log or log/slog function (or method)
// writes a record.
func isLogOutput(name string) bool {
	for _, p := range []string{"Print", "Fatal", "Panic", "Output", "Debug", "Info", "Warn", "Error", "Log"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// check applies the statement and expression rules to n in u.
func (c *checker) check(u *unit, n ast.Node) {
	info := c.pass.TypesInfo
	switch n := n.(type) {
	case *ast.GoStmt:
		u.add(n.Go, "go statement", adviceGo)
	case *ast.SendStmt:
		u.add(n.Arrow, "channel send", adviceChan)
	case *ast.UnaryExpr:
		if n.Op == token.ARROW {
			u.add(n.OpPos, "channel receive", adviceChan)
		}
	case *ast.CallExpr:
		if id, ok := ast.Unparen(n.Fun).(*ast.Ident); ok {
			if b, ok := info.Uses[id].(*types.Builtin); ok && b.Name() == "close" {
				u.add(n.Lparen, "close of a channel", adviceChan)
			}
		}
		c.checkChangeID(u, n)
	case *ast.RangeStmt:
		switch types.Unalias(info.TypeOf(n.X)).Underlying().(type) {
		case *types.Chan:
			u.add(n.For, "range over a channel", adviceChan)
		case *types.Map:
			if call := c.durableCall(n.Body); call != "" {
				u.add(n.For, "range over a map that reaches "+call, adviceMap)
			}
		}
		if n.Tok == token.ASSIGN {
			c.checkWrites(u, n.Key, n.Value)
		}
	case *ast.AssignStmt:
		if n.Tok != token.DEFINE {
			c.checkWrites(u, n.Lhs...)
		}
	case *ast.IncDecStmt:
		c.checkWrites(u, n.X)
	}
}

// checkChangeID reports a ctx.Patched or ctx.DeprecatePatch call whose
// change id is not a constant.
func (c *checker) checkChangeID(u *unit, call *ast.CallExpr) {
	fn, _ := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != durablePath || !patchCalls[fn.Name()] || !isCtxMethod(fn) || len(call.Args) == 0 {
		return
	}
	if tv, ok := c.pass.TypesInfo.Types[call.Args[0]]; ok && tv.Value != nil {
		return
	}
	u.add(call.Args[0].Pos(), "ctx."+fn.Name()+" with a non-constant change id", advicePatch)
}

// checkWrites reports each target that writes to a package-level variable.
func (c *checker) checkWrites(u *unit, targets ...ast.Expr) {
	for _, t := range targets {
		if t == nil {
			continue
		}
		if v := c.packageVar(t); v != nil {
			u.add(t.Pos(), "write to package-level variable "+v.Name(), adviceGlobals)
		}
	}
}

// packageVar returns the package-level variable that an assignment to e
// writes (e itself, or through a field, index or pointer), or nil.
func (c *checker) packageVar(e ast.Expr) *types.Var {
	info := c.pass.TypesInfo
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.SelectorExpr:
			if sel, ok := info.Selections[x]; ok && sel.Kind() == types.FieldVal {
				e = x.X
				continue
			}
			e = x.Sel // a qualified identifier: pkg.Var
		case *ast.Ident:
			v, ok := info.Uses[x].(*types.Var)
			if !ok || v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
				return nil
			}
			return v
		default:
			return nil
		}
	}
}

// readOnlyCtx are the context's methods that record nothing in history.
var readOnlyCtx = map[string]bool{
	"InstanceID": true, "ExecutionID": true, "OrchestrationName": true, "OrchestrationVersion": true,
	"IsReplaying": true, "CustomStatus": true, "KVValue": true, "KVValues": true,
	"KVKeys": true, "KVLen": true, "Logger": true, "HistorySize": true, "ContinueAsNewSuggested": true,
	"TraceInfo": true, "TraceWarn": true, "TraceError": true, "TraceDebug": true,
}

// durableCall returns the name of the first call in body that records in
// history (a method of the orchestration context, or any function given
// the context, other than the read-only ones), or "".
func (c *checker) durableCall(body *ast.BlockStmt) string {
	info := c.pass.TypesInfo
	var found string
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found != "" {
			return found == ""
		}
		fn, _ := typeutil.Callee(info, call).(*types.Func)
		if fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == durablePath && readOnlyCtx[fn.Name()] {
			return true
		}
		if fn != nil && isCtxMethod(fn) {
			found = "ctx." + fn.Name()
			return false
		}
		for _, arg := range call.Args {
			if isCtxPointer(info.TypeOf(arg)) {
				found = types.ExprString(call.Fun)
				return false
			}
		}
		return true
	})
	return found
}

// isCtxMethod reports whether fn is a method of the orchestration context.
func isCtxMethod(fn *types.Func) bool {
	recv := fn.Signature().Recv()
	return recv != nil && isCtxPointer(recv.Type())
}

func shortFile(name string) string { return filepath.Base(name) }

func itoa(i int) string { return strconv.Itoa(i) }
