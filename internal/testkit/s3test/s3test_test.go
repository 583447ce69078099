package s3test

import (
	"context"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestBucketName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)
	for _, test := range []string{
		"TestX",
		"TestBlobs/S3/interrupted_put",
		strings.Repeat("TestLong/", 20),
		"Test__Ünïcode--",
	} {
		name := bucketName(test)
		if !valid.MatchString(name) {
			t.Errorf("bucketName(%q) = %q, not a valid bucket name", test, name)
		}
		if again := bucketName(test); again == name {
			t.Errorf("bucketName(%q) twice = %q: not unique", test, name)
		}
	}
}

func TestNew(t *testing.T) {
	ctx := context.Background()
	var first string
	t.Run("bucket", func(t *testing.T) {
		first = New(t)
		u, err := url.Parse(first)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if u.Scheme != "s3" || q.Get("endpoint") != server.endpoint || q.Get("insecure") != "true" || q.Get("region") != Region {
			t.Errorf("New = %s", first)
		}
		if os.Getenv("AWS_ACCESS_KEY_ID") != AccessKey || os.Getenv("AWS_SECRET_ACCESS_KEY") != SecretKey {
			t.Error("New did not set the credentials")
		}
		c, err := Client()
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := c.BucketExists(ctx, u.Host); !ok || err != nil {
			t.Errorf("bucket %s: exists %v, %v", u.Host, ok, err)
		}
		if second := New(t); second == first {
			t.Errorf("New twice gave the same bucket %s", first)
		}
	})
	u, _ := url.Parse(first)
	c, err := Client()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.BucketExists(ctx, u.Host); ok || err != nil {
		t.Errorf("bucket %s after its test: exists %v, %v; want removed", u.Host, ok, err)
	}
}
