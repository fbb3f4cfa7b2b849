//! The readiness probe of a node (`GET /readyz`, no token): ready while
//! its lease is held and NATS is connected; not ready, with nothing more
//! said, while NATS is cut off; ready again once it is back.

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_nats_is_not_ready_until_it_is_back() {
    let _one = serial().await;
    let Some((fx, database, nats)) = cluster("").await else {
        return;
    };
    let (proxy, behind_proxy) = nats_proxy(&nats).await;
    let url = database.url();
    let a = start_node_on(&fx, "node-a", &url, &behind_proxy).await;
    let http = reqwest::Client::new();
    let readyz = || async {
        let answer = http
            .get(format!("{}/readyz", a.server.url))
            .send()
            .await
            .expect("the node answers");
        let status = answer.status().as_u16();
        (status, answer.text().await.expect("a body"))
    };
    assert_eq!(readyz().await, (200, "ready\n".to_string()));

    proxy.cut();
    let (status, body) = eventually("the node says it is not ready", || async {
        let (status, body) = readyz().await;
        (status == 503).then_some((status, body))
    })
    .await;
    assert_eq!((status, body.as_str()), (503, "not ready\n"));
    // Alive all the same, and the log says why.
    let livez = http
        .get(format!("{}/livez", a.server.url))
        .send()
        .await
        .expect("the node answers");
    assert_eq!(livez.status(), 200);
    assert!(
        a.server.stderr().contains("not ready (/readyz)"),
        "{}",
        a.server.stderr()
    );

    proxy.restore();
    eventually("the node is ready again", || async {
        (readyz().await.0 == 200).then_some(())
    })
    .await;
}
