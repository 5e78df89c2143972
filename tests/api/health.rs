use agentchat_tests::*;

#[tokio::test]
async fn healthz_and_readyz_answer() {
    let app = TestApp::builder().start().await;
    let r = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
}

#[tokio::test]
async fn unknown_route_is_a_json_404() {
    let app = TestApp::builder().start().await;
    let r = app.client.get(app.url("/api/nope")).send().await.unwrap();
    expect_error(r, 404, "not_found").await;
}
