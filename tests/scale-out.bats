#!/usr/bin/env bats
# kvpipe(7)'s scale-out recipe run for real over ssh: GNU parallel shards a
# fleet's capture files over two "hosts", two sshd of this test's own on
# 127.0.0.1, each on a free port, with a throwaway host key and user key in
# the test's temporary folder (root logs in by key; StrictModes off for the
# temporary folder; the authorized_keys file is the test's, named in the
# sshd -f config). The system's sshd and /etc/ssh are never used: sshd reads
# only that config (no Include), logs to its own stderr and writes only its
# pid file there; the client reads no ~/.ssh config (-F /dev/null) and
# knows the hosts from the test's known_hosts file. The results parallel
# brings back, and route-score's time-ordered merge of them, are compared
# byte for byte with the same recipe run locally (the local form alone is
# also tested in kv-capture.bats). The last test stops both sshd and checks
# they are gone; teardown_file stops them if a test failed first.
#
# The tools are on the hosts' PATH as kvpipe installed there would be: each
# sshd's config sets PATH (SetEnv) to $KVP_BIN first. A PATH the client sends
# (ssh -o SetEnv, sshd AcceptEnv) would not do: sshd sets PATH after it.
load test_helper

SSHD=/usr/sbin/sshd
S=$BATS_FILE_TMPDIR/ssh

# free_port: a TCP port of 127.0.0.1 no one listens on (a race with another
# program is caught by start_sshd, which then tries another).
free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# sshd as root runs its pre-authentication child chrooted into /run/sshd,
# which the system's ssh service makes when it starts. Without it, sshd
# runs in a mount namespace of its own whose /run is a private tmpfs
# holding that folder, so nothing of the system changes; where no mount
# namespace may be made, the test makes /run/sshd and removes it after.
privsep() {
	if [ -d /run/sshd ]; then
		echo direct
	elif unshare --mount true 2>/dev/null; then
		echo unshare
	else
		mkdir -m 0755 /run/sshd && touch "$S/made-run-sshd" && echo direct
	fi
}

# sshd_as HOW ARGS...: runs sshd, in its own mount namespace for "unshare".
sshd_as() {
	local how=$1
	shift
	if [ "$how" = unshare ]; then
		exec_in='mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -m 0755 /run/sshd && exec "$@"'
		unshare --mount sh -c "$exec_in" sh $SSHD "$@"
	else
		$SSHD "$@"
	fi
}

# start_sshd N: starts host N's sshd; writes its port to $S/port.N and its
# pid to $S/pid.N once it listens.
start_sshd() {
	local n=$1 try port i how bg
	how=$(privsep) || return 1
	for try in 1 2 3 4 5; do
		port=$(free_port)
		cat >"$S/sshd_config.$n" <<-EOF
			ListenAddress 127.0.0.1:$port
			HostKey $S/host_key
			PidFile $S/sshd.$n.pid
			AuthorizedKeysFile $S/authorized_keys
			PermitRootLogin prohibit-password
			PubkeyAuthentication yes
			PasswordAuthentication no
			KbdInteractiveAuthentication no
			UsePAM no
			StrictModes no
			PermitUserRC no
			PermitUserEnvironment no
			AllowTcpForwarding no
			X11Forwarding no
			PrintMotd no
			PrintLastLog no
			UseDNS no
			MaxStartups 64
			SetEnv PATH=$KVP_BIN:/usr/bin:/bin
		EOF
		sshd_as "$how" -t -f "$S/sshd_config.$n" || return 1
		sshd_as "$how" -D -e -f "$S/sshd_config.$n" 2>"$S/sshd.$n.log" 3>&- &
		bg=$!
		for i in $(seq 200); do
			[ -s "$S/sshd.$n.pid" ] && grep -q "Server listening on 127.0.0.1 port $port" "$S/sshd.$n.log" && break
			kill -0 "$bg" 2>/dev/null || break
			sleep 0.05
		done
		if [ -s "$S/sshd.$n.pid" ] && grep -q "Server listening on 127.0.0.1 port $port" "$S/sshd.$n.log"; then
			cp "$S/sshd.$n.pid" "$S/pid.$n"
			echo "$port" >"$S/port.$n"
			echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$S/host_key.pub")" >>"$S/known_hosts"
			return 0
		fi
		kill "$bg" 2>/dev/null
		wait "$bg" 2>/dev/null
	done
	echo "sshd $n did not start: $(cat "$S/sshd.$n.log")" >&2
	return 1
}

# stop_sshd N: stops host N's sshd (the pid its PidFile names) and waits
# until it is gone.
stop_sshd() {
	local pid i
	[ -f "$S/pid.$1" ] || return 0
	pid=$(cat "$S/pid.$1")
	kill "$pid" 2>/dev/null || true
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	rm -f "$S/pid.$1"
}

# login N: the ssh command of host N, as GNU parallel's --sshlogin takes it
# ("ssh OPTIONS HOST").
login() {
	echo "ssh -F /dev/null -p $(cat "$S/port.$1") -i $S/user_key -o IdentitiesOnly=yes" \
		"-o UserKnownHostsFile=$S/known_hosts -o GlobalKnownHostsFile=/dev/null" \
		"-o StrictHostKeyChecking=yes -o BatchMode=yes -o LogLevel=ERROR -l root 127.0.0.1"
}

setup_file() {
	[ "$(id -u)" = 0 ] || {
		echo "the ssh test logs in as root by key: run it as root (CI does)" >&2
		return 1
	}
	command -v rsync >/dev/null || {
		echo "no rsync (GNU parallel's --transferfile and --return use it): make deps" >&2
		return 1
	}
	mkdir -p "$S"
	ssh-keygen -q -t ed25519 -N '' -C kvpipe-test-host -f "$S/host_key" || return 1
	ssh-keygen -q -t ed25519 -N '' -C kvpipe-test-user -f "$S/user_key" || return 1
	cp "$S/user_key.pub" "$S/authorized_keys"
	: >"$S/known_hosts"
	start_sshd 1 && start_sshd 2
}

teardown_file() {
	stop_sshd 1
	stop_sshd 2
	if [ -f "$S/made-run-sshd" ]; then
		rmdir /run/sshd 2>/dev/null || true
	fi
}

# fleet DIR: four capture files, one per worker: the demo capture's two
# workers, and the same two as workers 3 and 4.
fleet() {
	local w
	mkdir -p "$1/captures"
	for w in 1 2; do
		jq -c "select(.worker_id == $w)" "$FIX/demo/capture.jsonl" | zstd -q -o "$1/captures/w$w.jsonl.zst"
		jq -c "select(.worker_id == $w) | .worker_id += 2" "$FIX/demo/capture.jsonl" |
			zstd -q -o "$1/captures/w$((w + 2)).jsonl.zst"
	done
}

# merge DIR: route-score over every result of DIR, merged by time, with the
# demo's requests.
merge() {
	local f args=()
	for f in "$1"/captures/*.events.ndjson; do
		args+=(--events "$f")
	done
	kvp route-score --block-size 4 "${args[@]}" --requests "$FIX/demo/requests.ndjson"
}

# recipe START: the command of kvpipe(7)'s literal display whose first line
# starts with START, as a reader sees it, continuation lines joined.
recipe() {
	mandoc -Tascii "$KVP_ROOT/man/kvpipe.7" | col -b |
		awk -v start="$1" '{ sub(/^[[:space:]]+/, "") }
			index($0, start) == 1 { on = 1 }
			on { if (sub(/\\$/, "")) { printf "%s", $0; next } print; exit }'
}

@test "each sshd lets root in by key, with the build's tools first on PATH" {
	local n
	for n in 1 2; do
		run -0 $(login $n) 'command -v kv-decode; id -u'
		assert_line --index 0 "$KVP_BIN/kv-decode"
		assert_line --index 1 0
		grep -q 'Accepted publickey for root from 127.0.0.1' "$S/sshd.$n.log" || fail "$(cat "$S/sshd.$n.log")"
	done
}

@test "kvpipe(7)'s recipe over --sshlogin on two hosts brings back what the local run writes, byte for byte" {
	local d=$BATS_TEST_TMPDIR f b local_cmd ssh_cmd
	fleet "$d/local"
	fleet "$d/remote"
	# parallel keeps its state (remote core counts, the will-cite note)
	# under $HOME/.parallel: a HOME of the test's own
	mkdir -p "$d/home/.parallel"
	touch "$d/home/.parallel/will-cite"
	local_cmd=$(recipe "parallel kv-decode")
	ssh_cmd=$(recipe "parallel --sshlogin host1,host2")
	[[ "$local_cmd" == *"::: captures/*.jsonl.zst" ]] || fail "kvpipe(7)'s local recipe: $local_cmd"
	[[ "$ssh_cmd" == *"--transferfile {}"*"--return {.}.events.ndjson"*"::: captures/*.jsonl.zst" ]] ||
		fail "kvpipe(7)'s ssh recipe: $ssh_cmd"
	# as documented, with the demo's block size; the hosts are our two sshd
	local_cmd=${local_cmd//--block-size 16/--block-size 4}
	ssh_cmd=${ssh_cmd//--block-size 16/--block-size 4}
	ssh_cmd=${ssh_cmd/--sshlogin host1,host2/--sshlogin \'$(login 1),$(login 2)\'}
	# both hosts are this machine: they work in a folder of their own
	# (--wd), one job each at a time (-j 1) so that both get some, and
	# the job log names the host of each job
	ssh_cmd=${ssh_cmd/#parallel /parallel -j 1 --wd $d/hosts --joblog $d/joblog }
	echo "# local: $local_cmd"
	echo "# ssh: $ssh_cmd"
	cd "$d/local"
	HOME=$d/home PATH=$KVP_BIN:$PATH bash -e -c "$local_cmd"
	cd "$d/remote"
	HOME=$d/home bash -e -c "$ssh_cmd"
	for f in "$d"/local/captures/*.jsonl.zst; do
		b=$(basename "$f" .zst)
		[ -s "$d/local/captures/$b.events.ndjson" ] || fail "local run: no $b.events.ndjson"
		cmp "$d/local/captures/$b.events.ndjson" "$d/remote/captures/$b.events.ndjson" ||
			fail "$b.events.ndjson differs"
	done
	[ "$(cat "$d"/remote/captures/*.events.ndjson | wc -l)" -eq 18 ] || fail "want 18 events"
	# the jobs ran on both hosts, over ssh
	run -0 awk -F'\t' 'NR > 1 { print $2 }' "$d/joblog"
	[ "${#lines[@]}" -eq 4 ] || fail "joblog: $(cat "$d/joblog")"
	assert_line "$(login 1)"
	assert_line "$(login 2)"
	run -0 awk -F'\t' 'NR > 1 { print $7 }' "$d/joblog"
	refute_line --regexp '[^0]'
	# --cleanup removed the hosts' copies (and the folder, left empty)
	[ ! -e "$d/hosts" ] || [ -z "$(find "$d/hosts" -type f)" ] || fail "left on the hosts: $(find "$d/hosts" -type f)"
	# one time-ordered merge of the results, as kvpipe(7) says next
	merge "$d/local" >"$d/local.merged"
	merge "$d/remote" >"$d/remote.merged"
	[ "$(grep -c '"rec":"decision"' "$d/local.merged")" -eq 4 ] || fail "$(cat "$d/local.merged")"
	cmp "$d/local.merged" "$d/remote.merged"
}

@test "both sshd stop: their processes are gone, their ports closed" {
	local n pid port
	for n in 1 2; do
		pid=$(cat "$S/pid.$n")
		port=$(cat "$S/port.$n")
		stop_sshd "$n"
		! kill -0 "$pid" 2>/dev/null || fail "sshd $n ($pid) still runs"
		run $(login "$n") true
		assert_failure 255
	done
}
