module github.com/flowgate/flowgate

go 1.24
