// Package etcdsource owns reading flowgate rules documents from etcd: a
// rules.Source that watches one key, for rules.Sync. It is a package of its
// own so that importing rules does not pull in the etcd client.
//
// One key holds one whole document. A put replaces the document at once, so
// a watching engine never sees part of an update, and a push can be a
// compare-and-swap on that key's revision (flowgate rules push). A prefix of
// several documents merged in key order was the alternative; it was not
// chosen, because an edit that spans two keys would reach engines as two
// updates, the first of them a mix that nobody wrote or validated.
//
// The source reads the key, then watches it from the revision after the one
// read, so no change in between is lost. After a disconnect the etcd client
// resumes the watch from the last revision seen; if that revision has been
// compacted away the source reads the key again and watches from there. A
// linearizable read every check interval tells an outage apart from quiet
// (Status then says etcd is unreachable, and the last good rules stay) and
// catches anything a stuck watch missed. A deleted key is reported as an
// error; the rules in force stay.
package etcdsource
