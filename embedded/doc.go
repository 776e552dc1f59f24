// Package embedded is the one call a program's main makes to get a durable
// store: the Cosmos DB account the environment names, or, without one, an
// in-process store kept in a local directory.
//
//	st, err := embedded.Open(ctx, &embedded.Options{Name: "orders"})
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//	rt, err := durable.Start(ctx, st.Provider, reg, nil)
//
// Start with [Open] and [Options].
//
// With COSMOS_ENDPOINT or COSMOS_CONNECTION_STRING set, Open connects to that
// account through [cdb.ConfigFromEnv] and [cdb.New]. Without them it starts
// localcosmos, the in-process server that speaks the Cosmos DB API, with its
// data directory set (localcosmos.Options.DataDir): every acknowledged write
// is fsynced to a write-ahead log, so a program killed with SIGKILL finds
// its instances again when it starts once more and the runtime carries them
// on. The directory is, in order: [Options].DataDir, the DUROXIDE_DATA_DIR
// variable, or .duroxide/<Name> under the working directory. Open prints
// which account or directory it uses to [Options].Log (standard error by
// default). A second process opening the same directory gets
// [ErrDataDirInUse].
//
// Open warns on [Options].Log whenever it starts the in-process store. A
// deployment sets DUROXIDE_REQUIRE_ACCOUNT=1 (or a program sets
// [Options].RequireAccount) so that a missing account variable fails
// Open with [ErrNoAccount] instead of running on a store local to the pod.
//
// The in-process store is this process's alone: it suits a single-process
// program, development and demos, not a fleet of workers (they need an
// account). It lives in its own package, not in cdb, so that programs
// using only an account do not link the in-process server.
package embedded
