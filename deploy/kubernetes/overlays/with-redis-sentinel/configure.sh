#!/bin/sh
# Writes this pod's redis.conf and sentinel.conf into /data from the shared ones in /config. A pod
# announces its stable name (<pod>.redis-sentinel, the headless Service). It replicates the primary
# the Sentinels name when they answer (after a failover pod 0 is a replica too), else pod 0, the
# first primary; pod 0 with no Sentinel answering starts as the primary.
set -eu
group=psd2gw
me="$(hostname).redis-sentinel"
first="redis-sentinel-0.redis-sentinel"
primary=""
for i in 0 1 2; do
  answer=$(redis-cli -h "redis-sentinel-$i.redis-sentinel" -p 26379 --raw \
    sentinel get-master-addr-by-name "$group" 2> /dev/null | head -n 1) || true
  if [ -n "$answer" ]; then
    primary="$answer"
    break
  fi
done
if [ -z "$primary" ]; then primary="$first"; fi
cp /config/redis.conf /data/redis.conf
echo "replica-announce-ip $me" >> /data/redis.conf
if [ "$primary" != "$me" ]; then echo "replicaof $primary 6379" >> /data/redis.conf; fi
cp /config/sentinel.conf /data/sentinel.conf
echo "sentinel announce-ip $me" >> /data/sentinel.conf
echo "sentinel monitor $group $primary 6379 2" >> /data/sentinel.conf
echo "sentinel down-after-milliseconds $group 5000" >> /data/sentinel.conf
echo "sentinel failover-timeout $group 60000" >> /data/sentinel.conf
