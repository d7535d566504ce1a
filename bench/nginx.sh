# shellcheck shell=bash
# nginx_conf DIR SERVER_BLOCK: writes DIR/nginx.conf for one nginx worker
# from Debian (no master, no daemon, no access log, keep-alive without a
# request cap, temp paths and logs under DIR) around SERVER_BLOCK.
nginx_conf() {
	local dir=$1 server=$2
	mkdir -p "$dir"
	cat >"$dir/nginx.conf" <<NGX
worker_processes 1;
daemon off;
master_process off;
error_log $dir/error.log;
pid $dir/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_max_body_size 4m;
    client_body_buffer_size 64k;
    client_body_temp_path $dir;
    proxy_temp_path $dir;
    fastcgi_temp_path $dir;
    uwsgi_temp_path $dir;
    scgi_temp_path $dir;
    $server
}
NGX
}
