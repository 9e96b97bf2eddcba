package etcdsource_test

import (
	"context"
	"log"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
	"github.com/flowgate/flowgate/rules/etcdsource"
)

// An engine follows the document at /flowgate/rules, and a local file while
// etcd has not answered. (Not run: it needs an etcd; the package's tests
// start one.)
func Example() {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	eng := flow.NewEngine()
	s, err := rules.Sync(context.Background(), eng, []rules.Source{
		etcdsource.New(cli, "/flowgate/rules"),
		rules.FileSource("/etc/shop/rules.json"),
	})
	if err != nil {
		log.Fatal(err) // no source gave a good document
	}
	defer s.Close()
}
